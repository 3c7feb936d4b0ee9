"""brax humanoid learning in env steps: does the center stand?

    python benchmarks/bench_humanoid_steps.py run --label noshape --algo pgpe --seeds 0 1 2 \
        [--steps 100000000] [--override KEY=VALUE] [--override KEY=VALUE] ...
    python benchmarks/bench_humanoid_steps.py summary RUN_FOLDER [RUN_FOLDER ...] [--plot FILE]

``run``: `neurorun algo=<algo> env=brax::humanoid max_time=null max_interactions=<steps>
seed=<seed> <overrides>` per seed, each in its own process, one after the other, into
runs/bench_humanoid_steps/<label>_s<seed> (its metrics.csv is the curve, written as it goes),
the load average sampled every minute beside it (load.txt). Run it alone on the machine.

``summary``: per run folder (its row of results/humanoid_steps.json replaced, the other rows
kept), the steps to the first center evaluation whose test episodes all
last ``STAND_LENGTH`` steps, and (with wall seconds) to the first of those that also scores >=
``STAND_SCORE`` (the humanoid stands), the best center_eval and its test-episode length, the
steps done, the median load;
written to results/humanoid_steps.json, with the given runs' curves (env steps on x:
center_eval and center_eval_length) as results/humanoid_steps.png (``--plot`` names another).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import statistics
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from harness import RESULTS, write_result
from omegaconf import OmegaConf

from neurorun.config.saved_yaml import read_config
from neurorun.record.layout import saved_config_path

HERE = Path(__file__).resolve().parent
RUNS = HERE.parent / "runs" / "bench_humanoid_steps"
STAND_SCORE, STAND_LENGTH = 5000.0, 1000.0  # 5 a step for staying up, every step


def _sample_load(path: Path, done: threading.Event) -> None:
    """The 1-minute load average into ``path`` every minute until ``done``."""
    with open(path, "a") as file:
        while not done.wait(60):
            file.write(f"{os.getloadavg()[0]:.2f}\n")
            file.flush()


def run(label: str, algo: str, seeds: list[int], steps: int, overrides: list[str]) -> None:
    for seed in seeds:
        folder = RUNS / f"{label}_s{seed}"
        folder.parent.mkdir(parents=True, exist_ok=True)
        done = threading.Event()
        threading.Thread(target=_sample_load, args=(folder.with_suffix(".load.txt"), done),
                         daemon=True).start()
        command = [sys.executable, "-m", "neurorun.cli.app", f"algo={algo}", "env=brax::humanoid",
                   "max_time=null", f"max_interactions={steps}", f"seed={seed}",
                   "logger.console.plain=true", f"hydra.run.dir={folder}", *overrides]
        finished = subprocess.run(command, check=False)
        done.set()
        if finished.returncode:
            sys.exit(f"{' '.join(command)} failed with {finished.returncode}")


def _policy(spec: str, constants: dict[str, Any]) -> str:
    """The network string with its constants written in (`Linear(obs_length, 64) >> ...`)."""
    return re.sub(r"\b\w+\b", lambda m: str(constants.get(m.group(), m.group())), spec)


def summary(folder: Path) -> dict[str, Any]:
    config = read_config(saved_config_path(folder))
    with open(folder / "metrics.csv", newline="") as file:
        rows = [row for row in csv.DictReader(file) if row["center_eval"]]
    stood = next((row for row in rows if float(row["center_eval"]) >= STAND_SCORE
                  and float(row.get("center_eval_length") or 0) >= STAND_LENGTH), None)
    up = next((row for row in rows  # every test episode lasts, whatever the score
               if float(row.get("center_eval_length") or 0) >= STAND_LENGTH), None)
    best = max(rows, key=lambda row: float(row["center_eval"]))
    loads = folder.with_suffix(".load.txt")
    load = [float(x) for x in loads.read_text().split()] if loads.is_file() else []
    return {"run": folder.name, "algo": config.algo.name, "seed": int(config.seed),
            "backend": config.env.env_config.backend,
            "policy": _policy(config.network.spec, config.network.network_args),
            "shaped": bool(config.problem.decrease_rewards_by
                           or config.problem.alive_bonus_schedule),
            # the training episodes' curriculum (a config older than the option has none)
            "episode_length_schedule": OmegaConf.to_container(config.problem).get(
                "episode_length_schedule"),
            "generations": int(rows[-1]["generation"]),
            "steps": int(rows[-1]["total_interaction_count"]),
            "wall_s": round(float(rows[-1]["elapsed_s"])),
            "steps_to_stand": None if stood is None else int(stood["total_interaction_count"]),
            "wall_s_to_stand": None if stood is None else round(float(stood["elapsed_s"])),
            "steps_to_full_length": None if up is None else int(up["total_interaction_count"]),
            "best_center_eval": round(float(best["center_eval"]), 1),
            "best_center_eval_length": float(best.get("center_eval_length") or "nan"),
            "best_at_steps": int(best["total_interaction_count"]),
            "load_average_median": round(statistics.median(load), 2) if load else None,
            "curve": [(int(row["total_interaction_count"]), float(row["center_eval"]),
                       float(row.get("center_eval_length") or "nan")) for row in rows]}


def plot(results: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (score, length) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    for result in results:
        steps, evals, lengths = zip(*result["curve"], strict=True)
        score.plot(steps, evals, label=result["run"], linewidth=0.8)
        length.plot(steps, lengths, linewidth=0.8)
    score.axhline(STAND_SCORE, color="gray", linestyle=":")
    score.set_ylabel("center_eval (unshaped)")
    length.set_ylabel("center test-episode length")
    length.set_xlabel("env steps")
    score.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=90)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    running = commands.add_parser("run")
    running.add_argument("--label", required=True)
    running.add_argument("--algo", default="pgpe")
    running.add_argument("--seeds", type=int, nargs="+", default=[0])
    running.add_argument("--steps", type=int, default=100_000_000)
    running.add_argument("--override", action="append", default=[])
    summarizing = commands.add_parser("summary")
    summarizing.add_argument("folders", type=Path, nargs="+")
    summarizing.add_argument("--plot", default="humanoid_steps.png",
                             help="the curves' file in results/ (the given folders' runs)")
    args = parser.parse_args()
    if args.command == "run":
        run(args.label, args.algo, args.seeds, args.steps, args.override)
        return
    results = [summary(folder) for folder in args.folders if folder.is_dir()]  # not load.txt
    path = RESULTS / "humanoid_steps.json"
    runs = {r["run"]: r for r in (json.loads(path.read_text())["runs"] if path.is_file() else [])}
    runs.update({r["run"]: {k: v for k, v in r.items() if k != "curve"} for r in results})
    write_result(path, runs=list(runs.values()))
    plot(results, RESULTS / args.plot)
    for result in results:
        print({k: v for k, v in result.items() if k != "curve"})


def _cut(row: dict) -> str:
    """The training fitness column's note of a curriculum: its [steps, length] points."""
    points = row.get("episode_length_schedule")
    if not points:
        return ""
    return ", episodes cut " + " → ".join(f"{length:,} at {steps / 1e6:g}M" for steps, length
                                          in points)


TABLES = [("humanoid_steps.json",
           "brax humanoid in env steps: steps to stand per algorithm (`bench_humanoid_steps.py`)")]


def table(report: dict) -> list[str]:
    lines = ["| run | algorithm | seed | backend | policy | training fitness | steps to "
             "1,000-step test episodes | steps to stand (wall s) | best center_eval "
             "(test-episode length) at steps | steps run | load average, median |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in report["runs"]:
        stood = ("not yet" if r["steps_to_stand"] is None else
                 f"{r['steps_to_stand'] / 1e6:.2f}M ({r['wall_s_to_stand']:,})")
        up = r.get("steps_to_full_length")
        lines.append(
            f"| {r['run']} | {r['algo']} | {r['seed']} | {r['backend']} | "
            f"`{r['policy']}` | "
            f"{'shaped' if r['shaped'] else 'own reward'}{_cut(r)} | "
            f"{'not yet' if up is None else f'{up / 1e6:.2f}M'} | {stood} | "
            f"{r['best_center_eval']:,.1f} ({r['best_center_eval_length']:.0f}) at "
            f"{r['best_at_steps'] / 1e6:.1f}M | {r['steps'] / 1e6:.1f}M | "
            f"{r['load_average_median']} |")
    return lines + ["", f"Stands: center_eval ≥ {STAND_SCORE:,.0f} over test episodes that all "
                    f"last {STAND_LENGTH:,.0f} steps. Wall s include the time other work ran "
                    "beside a run (its load)."]


if __name__ == "__main__":
    main()
