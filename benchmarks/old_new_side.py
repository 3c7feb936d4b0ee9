"""One tree's side of ``bench_old_new.py`` (run with that tree first on ``PYTHONPATH``).

    python benchmarks/old_new_side.py <env> <linear|mlp64> <popsize> <devices: 0 = auto> <calls>

Prints one JSON line: counted interactions per second of ``Problem.evaluate`` over ``calls``
evaluations of fresh populations (``0.1 * randn``, as early in training; the same seeds on
both sides), after one that compiles. Before each, the center's test episodes run, as in a
run's generation (untimed): a later evaluation meets the programs they compiled. The arguments
of bench_jax.py and bench_devices.py: 1,000-step episodes, at most 256 env slots in all.
"""

from __future__ import annotations

import json
import os
import sys
import time

EPISODE_LENGTH, MAX_SLOTS = 1000, 256
NETWORKS = {"linear": "Linear(obs_length, act_length)",
            "mlp64": "Linear(obs_length, 64) >> Tanh() >> Linear(64, act_length)"}


def main() -> None:
    env, network, popsize, devices, calls = sys.argv[1:6]
    popsize, devices, calls = int(popsize), int(devices), int(calls)
    if devices == 0:  # every core's host device, as the neurorun command gives jax
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_"
                                   f"platform_device_count={len(os.sched_getaffinity(0))}")
    import torch

    from neurorun.problems import make_problem

    problem = make_problem(env=env, network=NETWORKS[network], seed=0,
                           devices=devices or "auto", episode_length=EPISODE_LENGTH,
                           max_num_envs=min(popsize, MAX_SLOTS))
    generator = torch.Generator().manual_seed(0)

    def population() -> torch.Tensor:
        return 0.1 * torch.randn(popsize, problem.solution_length, generator=generator)

    problem.evaluate(population(), seed=0)  # compiles
    counted, elapsed = 0, 0.0
    for call in range(1, calls + 1):
        problem.test_episodes(population()[0], 2, seed=call)
        params = population()
        started = time.perf_counter()
        problem.evaluate(params, seed=call)
        elapsed += time.perf_counter() - started
        counted += problem.last_stats.num_interactions
    print(json.dumps({"steps_per_s": counted / elapsed}))


if __name__ == "__main__":
    main()
