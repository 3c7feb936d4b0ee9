"""Parallel evaluation on ray: the coordinator's cost and the speedup of actors.

    python benchmarks/bench_ray.py [--quick] [--cases coordinator,speedup]

- ``coordinator``: what the main process spends per generation when evaluation costs
  nothing: ray actors whose "evaluation" is the sphere function (one multiply-add per
  parameter, no env), for popsize P in (1,000, 10,000) x D in (1,000, 100,000) x actors in
  (2, 16, 64) (fractions of this machine's 2 CPUs), plain (the main process samples the
  population and sends it) and distributed (actors regenerate their shares from seeds, the
  main process ranks and sends weights, actors send weighted sums), for ARS, OpenAI-ES, PGPE,
  SNES, CEM and sep-CMA-ES. Cells that would hold more than 2 GB of samples in the main
  process (plain) or of noise and samples in one actor (distributed) are not run. Per cell:
  ``main_cpu_s``, the main process's CPU seconds per generation (``time.process_time``: its
  own work, not the wait for actors), ``wall_s``, and ``megabytes`` sent plus received per
  generation (payload bytes: ray's object store sends an object once per node). Median of
  ``--generations`` after one warm-up generation.
- ``noise``: seconds to make ``rows`` noise rows of length ``dim`` (an actor's share) from
  per-row seeds and from the shared noise table (``algo.noise_source``), min-median-max of 5.
- ``speedup``: HalfCheetah-v5 (its 1,000-step episodes) and Humanoid-v5 (200-step episodes,
  no early termination: random policies fall within tens of steps), EnvPool, popsize 64, a
  linear policy, PGPE: counted env steps per second of whole generations with 1 actor, 2
  actors (plain: the main process samples) and 2 actors distributed, median over generations
  2 onwards of 8; rounds alternate the three, ratios are taken per round (target for 2 over 1
  actor: >= 1.7 on 2 cores; distributed over plain: >= 1 to make it the default).

Writes benchmarks/results/ray.json.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import time
from typing import Any

import torch
from harness import RESULTS, ratios, spread, spread_text, write_result

from neurorun.parallel import worker as worker_module
from neurorun.problems import EvaluationStats

ALGORITHMS = {
    "ars": {"step_size": 0.02, "noise": 0.03},
    "openai_es": {"center_learning_rate": 0.01, "stdev_init": 0.02},
    "pgpe": {"center_learning_rate": 0.1, "stdev_learning_rate": 0.1, "radius_init": 2.0},
    "snes": {"stdev_init": 0.1},
    "cem": {"parenthood_ratio": 0.1, "stdev_init": 0.1},
    "sep_cmaes": {"stdev_init": 0.1},
}
CASES = ("noise", "speedup", "coordinator")
PLAIN_LIMIT_BYTES = 2 << 30  # plain mode holds P x D samples in the main process
ACTOR_LIMIT_BYTES = 2 << 30  # distributed mode: each actor holds its share's noise and samples


class SphereProblem:
    """Stands in for a Problem: fitness -|x|^2, one interaction and episode per solution."""

    obs_stats = None
    solution_length = 0  # set per cell

    def __init__(self) -> None:
        self.interaction_count = self.episode_count = 0
        self.last_stats = EvaluationStats()
        self._seed = 0

    def evaluate(self, params: torch.Tensor, seed: int | None = None) -> torch.Tensor:
        n = params.shape[0]
        self.last_stats = EvaluationStats(
            num_interactions=n, num_episodes=n, num_vector_steps=1, num_simulated_steps=n,
            num_subbatches=1, **{f"episode_{k}_{s}": 0.0 for k in ("return", "length")
                                 for s in ("min", "mean", "max")})
        self.interaction_count += n
        self.episode_count += n
        return -torch.linalg.vector_norm(params, dim=1).square()  # no P x D temporaries

    def draw_seed(self) -> int:
        self._seed += 1
        return self._seed

    def set_obs_stats(self, stats: Any) -> None: ...

    def reseed_action_noise(self, seed: int) -> None: ...

    def pop_obs_delta(self) -> None:
        return None

    def state_dict(self) -> dict[str, Any]:
        return {}

    def close(self) -> None: ...


class SphereWorker(worker_module.EvaluationWorker):
    """An actor whose problem is the sphere (what the evaluator's actors run here)."""

    def __init__(self, problem_kwargs: dict[str, Any]):
        self.problem, self.replica, self.noise = SphereProblem(), None, {}


def coordinator_cell(evaluator: Any, algo_name: str, popsize: int, dim: int, mode: str,
                     generations: int) -> dict[str, Any]:
    from neurorun.algorithms import make_algorithm

    algo = make_algorithm(algo_name, solution_length=dim, popsize=popsize, seed=0,
                          **ALGORITHMS[algo_name])
    evaluator.problem.solution_length = dim  # what plain mode checks the samples against
    cpu, wall, megabytes = [], [], []
    for generation in range(generations + 1):
        started, started_cpu = time.perf_counter(), time.process_time()
        if mode == "distributed":
            evaluator.distributed_step(algo)
        else:
            algo.tell(evaluator.evaluate(algo.ask()))
        if generation:  # the first one ships the replica and warms everything up
            cpu.append(time.process_time() - started_cpu)
            wall.append(time.perf_counter() - started)
            megabytes.append(sum(evaluator.last_transfer.values()) / 1e6)
    return {"main_cpu_s": spread(cpu, 3), "wall_s": spread(wall, 3),
            "megabytes": round(statistics.median(megabytes), 3)}


def bench_coordinator(sizes: list[tuple[int, int]], actor_counts: list[int],
                      generations: int) -> list[dict[str, Any]]:
    from neurorun.parallel import evaluator as evaluator_module

    evaluator_module.EvaluationWorker = SphereWorker  # the actors run the sphere
    results = []
    for actors in actor_counts:
        evaluator = evaluator_module.RayEvaluator(
            {"env": "CartPole-v1"}, problem=SphereProblem(), num_actors=actors, num_cpus=2,
            actor_config={"num_cpus": 2 / actors})
        try:
            for popsize, dim in sizes:
                for algo_name in ALGORITHMS:
                    for mode in ("plain", "distributed"):
                        row = {"algo": algo_name, "popsize": popsize, "dim": dim,
                               "actors": actors, "mode": mode}
                        share_bytes = 8 * popsize * dim / actors  # an actor's noise, samples
                        if mode == "plain" and 4 * popsize * dim > PLAIN_LIMIT_BYTES:
                            row["not_run"] = (f"{4 * popsize * dim / 1e9:.0f} GB of samples in "
                                              "the main process")
                        elif mode == "distributed" and share_bytes > ACTOR_LIMIT_BYTES:
                            row["not_run"] = (f"{share_bytes / 1e9:.0f} GB of noise and samples "
                                              "per actor")
                        else:
                            row.update(coordinator_cell(evaluator, algo_name, popsize, dim,
                                                        mode, generations))
                        print(row, flush=True)
                        results.append(row)
                        gc.collect()
        finally:
            evaluator.close()
    return results


def bench_noise(rounds: int) -> list[dict[str, Any]]:
    """Seconds to make a share's noise rows from per-row seeds and from a shared table."""
    from neurorun.algorithms.noise import make_noise, sample_noise

    results = []
    for count, dim in ((1000, 1000), (100, 100000), (1000, 100000)):
        seconds: dict[str, list[float]] = {"seeds": [], "table": []}
        sources = {name: make_noise(name, seed=0, table_size=None, dim=dim)
                   for name in seconds}
        for draw in range(rounds):
            for name, source in sources.items():
                started = time.perf_counter()
                sample_noise(source, draw, 0, count, dim, mirrored=False,
                             device=torch.device("cpu"), dtype=torch.float32)
                seconds[name].append(time.perf_counter() - started)
        row = {"rows": count, "dim": dim, "seeds_s": spread(seconds["seeds"], 4),
               "table_s": spread(seconds["table"], 4),
               "seeds_over_table": ratios(seconds["seeds"], seconds["table"])}
        print(row, flush=True)
        results.append(row)
    return results


def bench_speedup(generations: int, rounds: int) -> list[dict[str, Any]]:
    """Counted env steps per second of whole PGPE generations (ask, evaluate, tell): 1 actor,
    2 actors plain, 2 actors distributed; rounds alternate the three."""
    from neurorun.algorithms import make_algorithm
    from neurorun.parallel import RayEvaluator

    results = []
    setups = {"HalfCheetah-v5": {}, "Humanoid-v5": {
        "episode_length": 200, "env_config": {"terminate_when_unhealthy": False}}}
    modes = (("1 actor", 1, False), ("2 actors", 2, False), ("2 actors distributed", 2, True))
    for env, setup in setups.items():
        kwargs = {"env": f"envpool::{env}", "seed": 0, **setup}
        rates: dict[str, list[float]] = {name: [] for name, _, _ in modes}
        for _ in range(rounds):
            for name, actors, distributed in modes:
                with RayEvaluator(kwargs, num_actors=actors, num_cpus=2) as evaluator:
                    algo = make_algorithm("pgpe", solution_length=evaluator.solution_length,
                                          popsize=64, seed=0, **ALGORITHMS["pgpe"])
                    per_generation = []
                    for _ in range(generations):
                        started = time.perf_counter()
                        if distributed:
                            evaluator.distributed_step(algo)
                        else:
                            algo.tell(evaluator.evaluate(algo.ask()))
                        per_generation.append(evaluator.last_stats.num_interactions
                                              / (time.perf_counter() - started))
                    rates[name].append(statistics.median(per_generation[1:]))
        row = {"env": env, "popsize": 64, "generations": generations,
               **{f"steps_per_s_{name.replace(' ', '_')}": spread(rates[name], 0)
                  for name, _, _ in modes},
               "speedup_2_actors": ratios(rates["2 actors"], rates["1 actor"]),
               "distributed_over_plain": ratios(rates["2 actors distributed"],
                                                rates["2 actors"])}
        print(row, flush=True)
        results.append(row)
    return results


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="noise,coordinator,speedup")
    parser.add_argument("--quick", action="store_true",
                        help="coordinator: popsize 1,000 x D 1,000 and 2 actors only")
    parser.add_argument("--generations", type=int, default=3)
    parser.add_argument("--actors", default="2,16,64", help="coordinator: actor counts")
    parser.add_argument("--sizes", default="1000x1000,10000x1000,1000x100000,10000x100000",
                        help="coordinator: popsize x D cells")
    args = parser.parse_args(argv)
    path = RESULTS / "ray.json"  # cases not run now keep their last results
    old = json.loads(path.read_text()) if path.exists() else {}
    report: dict[str, Any] = {key: old[key] for key in (*CASES, "case_load_average")
                              if key in old}
    cases = args.cases.split(",")
    sizes = [(1000, 1000)] if args.quick else [
        tuple(int(n) for n in cell.split("x")) for cell in args.sizes.split(",")]
    actor_counts = [2] if args.quick else [int(n) for n in args.actors.split(",")]
    runs = {"noise": lambda: bench_noise(rounds=5),
            "speedup": lambda: bench_speedup(generations=8, rounds=2),
            "coordinator": lambda: bench_coordinator(sizes, actor_counts, args.generations)}
    loads = report.setdefault("case_load_average", {})  # the load as each case starts
    for case, run in runs.items():  # the file is rewritten after each case
        if case in cases:
            loads[case] = [round(x, 2) for x in os.getloadavg()]
            rows = run()
            if case == "coordinator":  # rows of other actor counts stay
                rows = [r for r in report.get(case, []) if r["actors"] not in actor_counts] + rows
            report[case] = rows
            write_result(path, **report)
    return report


TABLES = [  # (result file, title): what run.py's summary shows of this benchmark
    ("ray.json",
     "Ray actors (2 cores)"),
]


def table(r: dict) -> list[str]:
    lines = []
    loads = r.get("case_load_average", {})
    if loads:
        lines += ["Load average (1 min) as each case started: " + ", ".join(
            f"{case} {load[0]}" for case, load in loads.items()) + ".", ""]
    if r.get("speedup"):
        lines += ["PGPE, popsize 64, linear policy, EnvPool: counted env steps per second of "
                  "whole generations (ask, evaluate, tell), median (min–max) over rounds.", "",
                  "| env | 1 actor | 2 actors | 2 actors distributed | 2 ÷ 1 actor | "
                  "distributed ÷ plain |", "|---|---|---|---|---|---|"]
        for row in r["speedup"]:
            lines.append(
                f"| {row['env']} | {spread_text(row['steps_per_s_1_actor'], thousands=True)} | "
                f"{spread_text(row['steps_per_s_2_actors'], thousands=True)} | "
                f"{spread_text(row['steps_per_s_2_actors_distributed'], thousands=True)} | "
                f"{spread_text(row['speedup_2_actors'])} | "
                f"{spread_text(row['distributed_over_plain'])} |")
    if r.get("noise"):
        lines += ["", "Seconds to make an actor's share of noise rows (`algo.noise_source`).",
                  "", "| rows × D | seeds s | table s | seeds ÷ table |", "|---|---|---|---|"]
        for row in r["noise"]:
            lines.append(f"| {row['rows']:,} × {row['dim']:,} | "
                         f"{spread_text(row['seeds_s'], 4)} | {spread_text(row['table_s'], 4)} | "
                         f"{spread_text(row['seeds_over_table'])} |")
    if r.get("coordinator"):
        lines += ["", "The main process per generation when evaluation costs nothing (actors "
                  "evaluate the sphere): CPU seconds of the main process (`main_cpu_s`) and "
                  "megabytes sent plus received.", "",
                  "| algorithm | popsize × D | actors | plain: main CPU s / MB | distributed: "
                  "main CPU s / MB |", "|---|---|---|---|---|"]
        cells: dict[tuple, dict] = {}
        for row in r["coordinator"]:
            cells.setdefault((row["algo"], row["popsize"], row["dim"], row["actors"]),
                             {})[row["mode"]] = row
        for (algo, popsize, dim, actors), modes in cells.items():
            shown = []
            for mode in ("plain", "distributed"):
                row = modes.get(mode, {})
                shown.append(f"not run: {row['not_run']}" if "not_run" in row else
                             f"{row['main_cpu_s']['median']:.3f} / {row['megabytes']:,.1f}"
                             if row else "–")
            lines.append(f"| {algo} | {popsize:,} × {dim:,} | {actors} | {shown[0]} | "
                         f"{shown[1]} |")
    return lines


if __name__ == "__main__":
    main()
