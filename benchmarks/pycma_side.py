"""pycma's side of bench_restarts.py (runs in benchmarks/.venv-pycma): one JSON case from argv,
one JSON result per seed on stdout."""

import functools
import json
import sys

import cma
import numpy as np


def rastrigin(x):
    x = np.asarray(x, dtype=np.float64)
    return float(10 * len(x) + np.sum(x * x - 10 * np.cos(2 * np.pi * x)))


def main() -> None:
    case = json.loads(sys.argv[1])
    for seed in case["seeds"]:
        starts = np.random.default_rng(seed)
        count, reached = 0, None

        def objective(x):
            nonlocal count, reached
            count += 1
            value = rastrigin(x)
            if reached is None and value <= case["target"]:
                reached = count
            return value

        start = functools.partial(starts.uniform, -case["bound"], case["bound"], case["dim"])
        result = cma.fmin(objective, start,
                          case["sigma0"], {"ftarget": case["target"], "seed": seed + 1,
                                           "maxfevals": case["budget"], "verbose": -9},
                          restarts=case["max_restarts"], incpopsize=case["factor"],
                          bipop=case["strategy"] == "bipop")
        es = result[-2]
        print(json.dumps({"seed": seed, "evaluations_to_target": reached,
                          "evaluations": count, "best": es.best.f,
                          "last_popsize": es.sp.popsize}), flush=True)


if __name__ == "__main__":
    main()
