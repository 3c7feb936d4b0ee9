"""Parallel evaluation on ray (``make bench``): speedup, dispatch overhead, bytes sent.

One local ray (2 CPUs) for all cases:

- ``humanoid``: Humanoid-v5, popsize 64, a linear policy: env steps per second (counted
  interactions / evaluate wall time, median over generations) with 1 and 2 actors, and the
  speedup (target >= 1.7 on 2 cores).
- ``cartpole_dispatch``: CartPole-v1, popsize 256: ms per generation, local Problem vs 2
  actors; ``overhead_ms`` = ray ms - local ms / 2 (what dispatch costs beyond a perfect split).
- ``transfer``: bytes sent to / received from the actors per generation for a ~100k-parameter
  policy (popsize 64, PGPE), non-distributed (the population goes out) vs distributed (the
  distribution's parameters go out, gradients come back).

Writes benchmarks/results/ray.json.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import torch
from _report import write_report

RESULTS = Path(__file__).resolve().parent / "results" / "ray.json"
BIG_NET = ("Linear(obs_length, 300) >> Tanh() >> Linear(300, 300) >> Tanh() >> "
           "Linear(300, act_length)")


def _population(n: int, dim: int, scale: float, seed: int = 0) -> torch.Tensor:
    return scale * torch.randn(n, dim, generator=torch.Generator().manual_seed(seed))


def _steps_per_s(evaluator: Any, params: torch.Tensor, generations: int) -> float:
    evaluator.evaluate(params)  # warm-up: envs built, first resets
    rates = []
    for _ in range(generations):
        started = time.perf_counter()
        evaluator.evaluate(params)
        rates.append(evaluator.last_stats["num_interactions"] / (time.perf_counter() - started))
    return statistics.median(rates)


def bench_humanoid(generations: int = 3) -> dict[str, Any]:
    from neurorun.parallel import RayEvaluator

    kwargs = {"env": "Humanoid-v5", "seed": 0, "vectorization": "sync"}
    result: dict[str, Any] = {"env": "Humanoid-v5", "popsize": 64}
    params = None
    for actors in (1, 2):
        with RayEvaluator(kwargs, num_actors=actors) as evaluator:
            params = _population(64, evaluator.solution_length, 0.1) if params is None else params
            result[f"steps_per_s_{actors}_actors"] = _steps_per_s(evaluator, params, generations)
    result["speedup"] = result["steps_per_s_2_actors"] / result["steps_per_s_1_actors"]
    return result


def _ms_per_generation(evaluator: Any, params: torch.Tensor, generations: int) -> float:
    evaluator.evaluate(params)
    times = []
    for _ in range(generations):
        started = time.perf_counter()
        evaluator.evaluate(params)
        times.append(1000 * (time.perf_counter() - started))
    return statistics.median(times)


def bench_cartpole_dispatch(generations: int = 10) -> dict[str, Any]:
    from neurorun.parallel import RayEvaluator
    from neurorun.problems import make_problem

    kwargs = {"env": "CartPole-v1", "seed": 0, "observation_normalization": True}
    local = make_problem(**kwargs)
    params = _population(256, local.solution_length, 1.0)
    local_ms = _ms_per_generation(local, params, generations)
    local.close()
    with RayEvaluator(kwargs, num_actors=2) as evaluator:
        ray_ms = _ms_per_generation(evaluator, params, generations)
    return {"env": "CartPole-v1", "popsize": 256, "local_ms": local_ms, "ray_2_actors_ms": ray_ms,
            "overhead_ms": ray_ms - local_ms / 2}


def bench_transfer() -> dict[str, Any]:
    from neurorun.algorithms import make_algorithm
    from neurorun.parallel import RayEvaluator

    kwargs = {"env": "CartPole-v1", "network": BIG_NET, "seed": 0}
    with RayEvaluator(kwargs, num_actors=2) as evaluator:
        dim = evaluator.solution_length
        algo = make_algorithm("pgpe", solution_length=dim, popsize=64, seed=0,
                              center_learning_rate=0.01, stdev_learning_rate=0.1,
                              stdev_init=0.05)
        algo.tell(evaluator.evaluate(algo.ask()))
        plain = dict(evaluator.last_transfer)
        evaluator.distributed_step(algo)  # the first one also sends the algorithm copy
        evaluator.distributed_step(algo)
        distributed = dict(evaluator.last_transfer)
    return {"solution_length": dim, "popsize": 64, "actors": 2,
            "non_distributed": plain, "distributed": distributed,
            "reduction": plain["bytes_sent"] / distributed["bytes_sent"]}


def main() -> dict[str, Any]:
    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    started = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        cases = {"humanoid": bench_humanoid(), "cartpole_dispatch": bench_cartpole_dispatch(),
                 "transfer": bench_transfer()}
    finally:
        ray.shutdown()
    report = write_report(RESULTS, ray=ray.__version__, **cases,
                          wall_s=time.perf_counter() - started)
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
