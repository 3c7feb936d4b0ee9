"""How far trained policies' actions go past the action space's bounds (which neurorun clips).

    python benchmarks/bench_action_bounds.py RUN_FOLDER [RUN_FOLDER ...] [--checkpoint last]

Per run folder: its checkpoint (``--checkpoint``: last or best) plays 5 seeded test episodes
(as the run's center evaluation does) while every batch of policy outputs is recorded before
neurorun clips it to the env's Box bounds. Reported per run: the fraction of action components
beyond the bounds, their mean absolute value, the sum of squared actions per step before and
after clipping (the control cost of MuJoCo's locomotion envs is a weight times this sum;
EnvPool's and gymnasium's envs pay it on the action they get), and whether the env got them
clipped (neurorun's way) or as given (a screening patch that does not clip). Writes
results/action_bounds.json (its rows replaced for the runs given, the others kept).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from unittest import mock

import numpy as np
from harness import RESULTS, write_result

import neurorun.envs.base as base
from neurorun.tools.loading import load_policy

EPISODES, SEED = 5, 123
PATH = RESULTS / "action_bounds.json"


def measure(run: str, checkpoint: str) -> dict:
    loaded = load_policy(run, checkpoint=checkpoint)
    problem = loaded.make_problem(None)
    outputs: list[np.ndarray] = []
    clipping: set[bool] = set()  # whether the adapter clips (a screening patch may not)
    clip = base.ActionAdapter.__call__

    def record(adapter: base.ActionAdapter, actions: np.ndarray) -> np.ndarray:
        outputs.append(np.array(actions, dtype=np.float64))
        clipping.add(adapter.bounds is not None)
        return clip(adapter, actions)

    with mock.patch.object(base.ActionAdapter, "__call__", record):
        returns, lengths = problem.test_episodes(loaded.solution, EPISODES, SEED)
    high = np.asarray(problem.env_action_space.high, dtype=np.float64).reshape(-1)
    low = np.asarray(problem.env_action_space.low, dtype=np.float64).reshape(-1)
    actions = np.concatenate(outputs)
    clipped = np.clip(actions, low, high)
    problem.close()
    return {"run": Path(run).resolve().name, "checkpoint": checkpoint, "env": loaded.env,
            "sent": "clipped" if clipping == {True} else "unclipped",
            "center_eval": round(float(returns.mean()), 1),
            "episode_steps": round(float(lengths.float().mean()), 1),
            "beyond_bounds": round(float((actions != clipped).mean()), 3),
            "mean_abs_action": round(float(np.abs(actions).mean()), 3),
            "sum_sq_raw": round(float((actions ** 2).sum(1).mean()), 2),
            "sum_sq_clipped": round(float((clipped ** 2).sum(1).mean()), 2),
            "load_average": [round(x, 2) for x in os.getloadavg()]}


TABLES = [("action_bounds.json", "Trained policies' actions against the action bounds")]


def table(report: dict) -> list[str]:
    lines = ["| run (checkpoint) | env | actions sent | center_eval (test-episode steps) | action "
             "components beyond the bounds | mean abs action | sum of squared actions a step: "
             "given / clipped |", "|---|---|---|---|---|---|---|"]
    for r in report["runs"]:
        lines.append(f"| {r['run']} ({r['checkpoint']}) | {r['env']} | {r['sent']} | "
                     f"{r['center_eval']:,.1f} "
                     f"({r['episode_steps']:.0f}) | {r['beyond_bounds']:.1%} | "
                     f"{r['mean_abs_action']:.3f} | {r['sum_sq_raw']:.2f} / "
                     f"{r['sum_sq_clipped']:.2f} |")
    return lines + ["", f"{EPISODES} test episodes (seed {SEED}) per run; actions as the policy "
                    "gives them, before neurorun clips them to the action space (*clipped*: "
                    "what neurorun sends; *unclipped*: a screening patch that sends them as "
                    "given, as ARS's code does)."]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="run folders")
    parser.add_argument("--checkpoint", default="last", choices=("last", "best"))
    args = parser.parse_args()
    kept = json.loads(PATH.read_text())["runs"] if PATH.exists() else []
    measured = [measure(run, args.checkpoint) for run in args.runs]
    names = {(r["run"], r["checkpoint"]) for r in measured}
    rows = [r for r in kept if (r["run"], r["checkpoint"]) not in names] + measured
    for row in measured:
        print(row, flush=True)
    write_result(PATH, runs=rows)


if __name__ == "__main__":
    main()
