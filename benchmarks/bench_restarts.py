"""Restart strategies against pycma's on Rastrigin (D = 10): evaluations to the target.

    python benchmarks/bench_restarts.py [--seeds 10] [--budget 500000]

Both sides run CMA-ES from a start drawn uniformly in [-5, 5]^10 (a new draw at each restart),
step size 2, default popsize 4 + floor(3 ln D) = 10, popsize factor 2, target f <= 1e-8, at
most BUDGET evaluations, with each strategy:

- pycma 4.5.0 (``cma.fmin``, ``restarts=9``, ``incpopsize=2``, ``bipop``), in
  benchmarks/.venv-pycma (made on first use with one pip command): its own stop criteria
  (tolfun, tolx, stagnation, ...) end an attempt;
- neurorun: ``make_algorithm("cmaes")`` in float64, driven by ``neurorun.loop.restarts`` as the
  runner drives it (``RestartSchedule.restart_due`` after every generation with the center's
  value as its center evaluation, ``restart.patience`` PATIENCE, ``min_improvement`` 0.05), and
  ``same`` (no growth, on the first SAME_SEEDS seeds) to show what the population growth buys.

Evaluations to the target count every objective call up to the first f <= 1e-8 (sampled
solutions; neurorun's center evaluations are not counted, as the runner's are test episodes).
Writes benchmarks/results/restarts.json: per case the solved fraction, the median and worst
evaluations to the target over solved seeds, and each seed's row.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
from pathlib import Path

import numpy as np
import torch
from harness import RESULTS, write_result

from neurorun.algorithms import make_algorithm
from neurorun.loop.restarts import RestartSchedule, StallWatch

HERE = Path(__file__).resolve().parent
VENV = HERE / ".venv-pycma"
PACKAGES = ("cma==4.5.0", "numpy")
DIM, BOUND, SIGMA0, TARGET, FACTOR = 10, 5.0, 2.0, 1e-8, 2.0
POPSIZE = 4 + int(3 * np.log(DIM))  # CMA-ES's default, pycma's and neurorun's
SAME_SEEDS = 3  # seeds of neurorun's `same` case (each spends the whole budget at popsize 10)
PATIENCE = 20  # generations (one center evaluation each) without a 5 % fall: a restart


def rastrigin(x: np.ndarray) -> np.ndarray:
    """f(x) = 10 D + sum(x^2 - 10 cos(2 pi x)) per row, in float64; 0 at the origin."""
    return 10 * x.shape[-1] + np.sum(x * x - 10 * np.cos(2 * np.pi * x), axis=-1)


def neurorun_run(strategy: str, seed: int, budget: int) -> dict:
    """One seed of neurorun's CMA-ES with ``strategy``'s restarts."""
    starts = np.random.default_rng(seed)
    schedule = RestartSchedule(strategy, POPSIZE, FACTOR, seed=seed,
                               stall=StallWatch(PATIENCE, 0.05, "min"))
    count, best = 0, float("inf")

    def start():
        options = schedule.attempt.options({"center_init": starts.uniform(-BOUND, BOUND, DIM)
                                            .tolist(), "stdev_init": SIGMA0})
        return make_algorithm("cmaes", solution_length=DIM, popsize=schedule.attempt.popsize,
                              seed=seed * 1000 + schedule.restarts, dtype=torch.float64,
                              objective_sense="min", **options)

    algorithm = start()
    while count < budget:
        values = rastrigin(algorithm.ask().numpy())
        hits = np.flatnonzero(values <= TARGET)
        if hits.size:
            return {"seed": seed, "evaluations_to_target": count + int(hits[0]) + 1,
                    "restarts": schedule.restarts, "last_popsize": schedule.attempt.popsize}
        count += len(values)
        best = min(best, float(values.min()))
        algorithm.tell(torch.from_numpy(values))
        center = float(rastrigin(algorithm.center.numpy()))
        if schedule.restart_due(len(values), center):
            schedule.next_attempt()
            algorithm = start()
    return {"seed": seed, "evaluations_to_target": None, "best": best,
            "restarts": schedule.restarts, "last_popsize": schedule.attempt.popsize}


def ensure_venv() -> Path:
    """pycma's venv's python, created when missing or broken."""
    python = VENV / "bin" / "python"
    check = [str(python), "-c", "import cma"]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return python
    subprocess.run(["python3", "-m", "venv", str(VENV)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", *PACKAGES], check=True)
    return python


def pycma_runs(python: Path, strategy: str, seeds: list[int], budget: int) -> list[dict]:
    case = {"strategy": strategy, "seeds": seeds, "dim": DIM, "bound": BOUND, "sigma0": SIGMA0,
            "target": TARGET, "budget": budget, "factor": FACTOR, "max_restarts": 9}
    out = subprocess.run([str(python), str(HERE / "pycma_side.py"), json.dumps(case)],
                         check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines()]


def summary(rows: list[dict]) -> dict:
    solved = [r["evaluations_to_target"] for r in rows if r["evaluations_to_target"]]
    return {"solved": f"{len(solved)}/{len(rows)}",
            "median_evaluations": statistics.median(solved) if solved else None,
            "worst_evaluations": max(solved) if solved else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--budget", type=int, default=500_000)
    args = parser.parse_args()
    seeds = list(range(args.seeds))
    python = ensure_venv()
    cases = {}
    for strategy in ("ipop", "bipop"):
        cases[f"pycma {strategy}"] = pycma_runs(python, strategy, seeds, args.budget)
        print(f"pycma {strategy}: {summary(cases[f'pycma {strategy}'])}", flush=True)
    for strategy in ("ipop", "bipop", "same"):  # same: SAME_SEEDS (a budget's worth of popsize 10)
        cases[f"neurorun {strategy}"] = [neurorun_run(strategy, s, args.budget)
                                         for s in (seeds[:SAME_SEEDS] if strategy == "same"
                                                   else seeds)]
        print(f"neurorun {strategy}: {summary(cases[f'neurorun {strategy}'])}", flush=True)
    write_result(RESULTS / "restarts.json", function=f"rastrigin D={DIM}", target=TARGET,
                 budget=args.budget, popsize=POPSIZE, factor=FACTOR, patience=PATIENCE,
                 cases={name: {**summary(rows), "seeds": rows} for name, rows in cases.items()})


TABLES = [  # (result file, title): what run.py's summary shows of this benchmark
    ("restarts.json",
     "Restart strategies against pycma 4.5.0 (`bench_restarts.py`)"),
]


def table(report: dict) -> list[str]:
    lines = [f"CMA-ES on {report['function']} from a uniform start in [-5, 5]^D, default popsize "
             f"{report['popsize']}, popsize factor {report['factor']:g}, target f <= "
             f"{report['target']:g}, at most {report['budget']:,} evaluations; neurorun's "
             f"attempts end by its stall rule (restart.patience={report['patience']}), "
             "pycma's by its own stop criteria.", "",
             "| restarts | solved | median evaluations to the target | worst |",
             "|---|---|---|---|"]
    for name, case in report["cases"].items():
        median, worst = case["median_evaluations"], case["worst_evaluations"]
        lines.append(f"| {name} | {case['solved']} | "
                     f"{'–' if median is None else f'{median:,.0f}'} | "
                     f"{'–' if worst is None else f'{worst:,}'} |")
    return lines


if __name__ == "__main__":
    main()
