"""Time and interactions to solve classic tasks, per algorithm, over seeds (``make bench``).

    python benchmarks/bench_learning.py [--full] [--seeds 3] [--algos pgpe,snes]

Each run goes through ``neurorun.loop.runner.run(compose_config([...]))``, the path of the
``neurorun`` command, with a ``max_time`` cap, a center evaluation every generation (the mean
of 5 seeded test episodes; its cost is in the time) and checkpoints only at the end. A run is
solved when the center's evaluation reaches the env's target: CartPole-v1 475, Pendulum-v1
-200, LunarLanderContinuous-v3 200. Reported per env and algorithm: solved runs, median
wall seconds and median training interactions (env steps, center evaluation excluded) to
solve, over the solved runs; unsolved runs count as the cap in ``median_s_capped``.

Torch runs one thread (``--threads``, as ray actors do), so that other processes on the
machine do not slow the batched policy down several-fold. ``--jobs 2`` runs two seeds at a
time in separate processes, one per core (each run still single-threaded). Quick mode:
CartPole-v1 only (target: solved in < 10 s on 2 cores); ``--full`` adds Pendulum-v1 and
LunarLanderContinuous-v3; ``--envs playground::CartpoleBalance,playground::CartpoleSwingup,
brax::inverted_pendulum --algos pgpe --jobs 1`` runs the jax presets (compiled evaluation,
both cores). The settings are in SETTINGS below. Run folders
go to runs/bench_learning/ (ignored by git); curves (center_eval against interactions and
against time, drawn with neurorun.tools.plot) and benchmarks/results/learning.json go to
benchmarks/results/.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import json
import multiprocessing
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

from harness import write_result

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
RUNS = HERE.parent / "runs" / "bench_learning"
ALGOS = ("pgpe", "snes", "cem", "xnes")
# env -> (target, max_time cap in seconds, overrides for every algorithm, per-algorithm ones)
SETTINGS: dict[str, tuple[float, float, list[str], dict[str, list[str]]]] = {
    "CartPole-v1": (475, 30, ["network=linear"], {
        "pgpe": ["algo.popsize=50", "algo.center_learning_rate=0.1125", "algo.radius_init=2.25",
                 "algo.optimizer_config.max_speed=0.15"],
        "snes": ["algo.popsize=50"],
        "cem": ["algo.popsize=50", "algo.parenthood_ratio=0.2", "algo.stdev_min=0.05"],
        "xnes": ["algo.popsize=20"],
    }),
    # Pendulum: a wide initial search (stdev 1), observation normalization and small
    # populations (many generations) matter most.
    "Pendulum-v1": (-200, 300, ["network=mlp", "network.network_args.hidden=16",
                                "problem.observation_normalization=true",
                                "algo.radius_init=null", "algo.stdev_init=1.0"], {
        "pgpe": ["algo.popsize=40", "algo.center_learning_rate=0.2",
                 "algo.optimizer_config.max_speed=0.4"],
        "snes": ["algo.popsize=40"],
        "cem": ["algo.popsize=50", "algo.parenthood_ratio=0.2", "algo.stdev_min=0.1"],
        "xnes": ["algo.popsize=40"],
    }),
    # LunarLander: observation normalization cut PGPE's time to solve from > 800 s to ~100 s.
    "LunarLanderContinuous-v3": (200, 300, ["network=linear",
                                            "problem.observation_normalization=true"], {
        "pgpe": ["algo.popsize=200", "algo.center_learning_rate=0.225", "algo.radius_init=4.5",
                 "algo.optimizer_config.max_speed=0.3"],
        "snes": ["algo.popsize=100", "algo.radius_init=null", "algo.stdev_init=1.0"],
        "cem": ["algo.popsize=200", "algo.parenthood_ratio=0.1", "algo.radius_init=null",
                "algo.stdev_init=1.0", "algo.stdev_min=0.05"],
        "xnes": ["algo.popsize=50", "algo.radius_init=null", "algo.stdev_init=1.0"],
    }),
    # jax envs (compiled evaluation; the experiment= presets, PGPE only): not in --full, run
    # with --envs; episodes of 1000 steps, so the caps are minutes
    "playground::CartpoleBalance": (950, 300, ["experiment=playground_cartpole_balance"],
                                    {"pgpe": []}),
    "playground::CartpoleSwingup": (800, 600, ["experiment=playground_cartpole_swingup"],
                                    {"pgpe": []}),
    "brax::inverted_pendulum": (1000, 300, ["experiment=brax_inverted_pendulum"],
                                {"pgpe": []}),
    # made for a GPU (popsize 1,024; `--override problem.device=cuda`)
    "playground::CheetahRun": (700, 1800, ["experiment=playground_cheetah_run"],
                               {"pgpe": []}),
    # the same task on EnvPool (MuJoCo's InvertedPendulum-v5: reward 1 per step, 1000 steps),
    # with the same PGPE settings, to compare time to target across backends
    "InvertedPendulum-v5": (1000, 300, ["network=linear", "algo.popsize=20"], {"pgpe": []}),
}
QUICK_ENVS = ("CartPole-v1",)
FULL_ENVS = ("CartPole-v1", "Pendulum-v1", "LunarLanderContinuous-v3")


def overrides(env: str, algo: str, seed: int, extra: list[str]) -> list[str]:
    """The command-line overrides of one run (what `neurorun` would be given): the center
    evaluated every generation, except where an experiment= preset says how often (as shipped,
    e.g. playground_cheetah_run's every 4th on a GPU)."""
    target, cap, common, per_algo = SETTINGS[env]
    every = [] if any(x.startswith("experiment=") for x in common) else ["eval_every=1"]
    return [f"env={env}", f"algo={algo}", *common, *per_algo[algo], f"seed={seed}",
            f"max_time={cap}", "generations=null", f"target_score={target}", *every,
            "eval_episodes=5", "checkpoint_every=0", "logger.console.quiet=true", *extra]


def run_folder(args: list[str], folder: Path, label: list[str]) -> dict[str, Any]:
    """Run ``neurorun <args>`` into ``folder`` (replaced) in this process; its figures.

    ``label`` becomes the folder's .hydra/overrides.yaml: neurorun-plot groups runs by it.
    """
    from neurorun.cli.app import compose_config
    from neurorun.loop.runner import run
    from neurorun.record.layout import overrides_path

    shutil.rmtree(folder, ignore_errors=True)
    started = time.perf_counter()
    result = run(compose_config(args), run_dir=folder)
    wall = time.perf_counter() - started
    overrides_path(folder).write_text("".join(f"- {x}\n" for x in label))
    solved = str(result.get("stop_reason", "")).startswith("target_score")
    with (folder / "metrics.csv").open() as metrics:  # the last generation that evaluated it
        evals = [float(row["center_eval"]) for row in csv.DictReader(metrics)
                 if row["center_eval"] not in ("", "nan")]
    return {"solved": solved, "seconds": round(result["elapsed_s"], 2), "wall_s": round(wall, 2),
            "interactions": int(result["total_interaction_count"]),
            "episodes": int(result["total_episode_count"]),
            "generations": int(result["generation"]),
            "center_eval": round(evals[-1], 1) if evals else None,
            "best_center_eval": round(max(evals), 1) if evals else None}


def run_one(env: str, algo: str, seed: int, runs_dir: Path, extra: list[str]) -> dict[str, Any]:
    folder = runs_dir / env / f"{algo}_s{seed}"
    label = [f"algo={algo}", f"seed={seed}"]
    return {"seed": seed, **run_folder(overrides(env, algo, seed, extra), folder, label)}


def _set_threads(threads: int) -> None:
    if threads:
        import torch

        torch.set_num_threads(threads)


def run_all(env: str, algo: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every seed of one env and algorithm, ``args.jobs`` processes at a time."""
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    if args.jobs <= 1:
        return [run_one(env, algo, seed, args.runs_dir, args.override) for seed in seeds]
    with concurrent.futures.ProcessPoolExecutor(
            args.jobs, mp_context=multiprocessing.get_context("spawn"),
            initializer=_set_threads, initargs=(args.threads,)) as pool:
        futures = [pool.submit(run_one, env, algo, seed, args.runs_dir, args.override)
                   for seed in seeds]
        return [future.result() for future in futures]


def summarize(env: str, algo: str, runs: list[dict[str, Any]], extra: list[str]) -> dict[str, Any]:
    target, cap, common, per_algo = SETTINGS[env]
    caps = [float(x.split("=", 1)[1]) for x in extra if x.startswith("max_time=")]
    cap = caps[-1] if caps else cap  # an --override max_time= is the cap the runs had
    solved = [r for r in runs if r["solved"]]
    capped = [r["seconds"] if r["solved"] else cap for r in runs]

    def median(key: str) -> float | None:
        return round(statistics.median(r[key] for r in solved), 2) if solved else None

    return {"env": env, "algo": algo, "target": target, "max_time": cap,
            "settings": " ".join(common + per_algo[algo] + extra), "solved": len(solved),
            "runs": len(runs), "median_s": median("seconds"),
            "median_s_capped": round(statistics.median(capped), 2),
            "median_interactions": median("interactions"),
            "median_generations": median("generations"), "per_seed": runs}


def plot_curves(name: str, runs: list, target: float, note: str = "") -> list[str]:
    """center_eval of ``runs`` (neurorun.tools.runs.Run) against interactions and against time
    (one color per group, each run its own line), saved as learning_<name>_<x>.png; ``note``
    goes under the title."""
    from neurorun.tools.plot import draw_runs

    names = []
    for x in ("interactions", "time"):
        out = RESULTS / f"learning_{name.replace('::', '_')}_{x}.png"
        figure = draw_runs(runs, x=x, y="center_eval", band="runs")
        figure.axes[0].axhline(target, color="grey", linestyle=":", linewidth=1)
        figure.suptitle(f"{name}: center_eval (target {target})" + (f"\n{note}" if note else ""),
                        fontsize="medium" if note else None)
        figure.savefig(out, dpi=90)
        names.append(out.name)
    return names


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="add Pendulum and LunarLander")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=0,
                        help="seeds first-seed .. first-seed + seeds - 1 (one seed per call of "
                        "a lent machine)")
    parser.add_argument("--algos", default=",".join(ALGOS))
    parser.add_argument("--envs", help="comma-separated env ids (default: by --full)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (0: torch's default, one per core); with one per "
                        "core, a loaded machine slows batched policies down several-fold")
    parser.add_argument("--jobs", type=int, default=1,
                        help="runs at a time, each in its own process (at most one per core)")
    parser.add_argument("--runs-dir", type=Path, default=RUNS)
    parser.add_argument("--override", action="append", default=[],
                        help="one more override for every run (repeatable), e.g. max_time=60")
    parser.add_argument("--out", type=Path, default=RESULTS / "learning.json")
    parser.add_argument("--no-plots", action="store_true",
                        help="draw no curves into benchmarks/results/ (trying settings)")
    args = parser.parse_args(argv)
    _set_threads(args.threads)
    from neurorun.tools.runs import load_runs

    envs = args.envs.split(",") if args.envs else list(FULL_ENVS if args.full else QUICK_ENVS)
    results, plots = [], []
    for env in envs:
        for algo in args.algos.split(","):
            runs = run_all(env, algo, args)
            summary = summarize(env, algo, runs, args.override)
            print(json.dumps(summary), flush=True)
            results.append(summary)
            write_result(args.out, full=args.full, torch_threads=args.threads,  # so far
                         jobs=args.jobs, plots=plots, results=results)
        if not args.no_plots:
            plots += plot_curves(env, load_runs([args.runs_dir / env]), SETTINGS[env][0])
    return write_result(args.out, full=args.full, torch_threads=args.threads, jobs=args.jobs,
                        plots=plots, results=results)


TABLES = [  # (result file, title): what run.py's summary shows of this benchmark
    ("learning.json",
     "Learning: time and interactions to solve, over seeds (center evaluation each generation "
     "included in the time)"),
    ("learning_jax.json",
     "Learning on brax and MuJoCo Playground (the compiled evaluation), and the same task on "
     "EnvPool, alone on the machine"),
]


def curve_names(report: dict) -> list[str]:
    """A line naming the report's curve images, drawn into results/ by the benchmark and not
    committed (none when it has none)."""
    plots = report.get("plots", [])
    return ["", "Curves (drawn by the benchmark, not committed): "
            + ", ".join(f"`{p}`" for p in plots)] if plots else []


def table(report: dict) -> list[str]:
    lines = ["| env | algorithm | solved | median s to solve | median interactions | "
             "median generations | settings |", "|---|---|---|---|---|---|---|"]
    for r in report["results"]:
        seconds = "–" if r["median_s"] is None else r["median_s"]
        steps = "–" if r["median_interactions"] is None else f"{int(r['median_interactions']):,}"
        gens = "–" if r["median_generations"] is None else int(r["median_generations"])
        lines.append(f"| {r['env']} (≥ {r['target']}) | {r['algo']} | "
                     f"{r['solved']}/{r['runs']} (cap {r['max_time']} s) | {seconds} | {steps} | "
                     f"{gens} | `{r['settings']}` |")
    return lines + curve_names(report)


if __name__ == "__main__":
    main()
