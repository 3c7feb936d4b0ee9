"""The headline, `neurorun algo=pgpe env=brax::humanoid`, per brax physics backend.

    python benchmarks/bench_humanoid.py [--backends generalized,positional,spring,mjx,envpool]
        [--seconds 300] [--seeds 0] [--label NAME] [--override KEY=VALUE ...]
        [--summary-only]

Each run is the `neurorun` command as a user types it, in its own process (so the CLI sets
up the jax devices, as it does for a user), with `env.env_config.backend=<backend>` (or, for
`envpool`, `env=Humanoid-v5`: MuJoCo's humanoid on EnvPool) and the overrides given: first 2
generations on an empty jax compilation cache (a first run's compile time), then
`max_time=<seconds>` of training on that cache. Run it alone on the machine. Every finished
run is appended at once to results/humanoid_runs.jsonl with its curve (wall seconds, env
steps, center_eval: the unshaped return of 5 seeded test episodes, the training episodes'
mean length and unshaped return) and the load average; humanoid.json (per label and backend:
best center_eval, episode length at the end, steps/s) and
learning_brax_humanoid_{center_eval,episode_length_mean}.png are rebuilt from that file.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from harness import write_result

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
RUNS = HERE.parent / "runs" / "bench_humanoid"
LOG = RESULTS / "humanoid_runs.jsonl"
BACKENDS = ("generalized", "positional", "spring", "mjx")
# not a brax backend: EnvPool's Humanoid-v5 (MuJoCo's own physics, the same body) with the same
# settings, for the simulator this CPU steps best (its env preset keeps its own reward shift)
ENVPOOL = "envpool"
CURVE_COLUMNS = ("elapsed_s", "total_interaction_count", "center_eval", "episode_length_mean",
                 "episode_return_mean")


def _neurorun(args: list[str], cache: Path) -> tuple[subprocess.CompletedProcess, float]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "neurorun.cli.app", *args], capture_output=True,
                          text=True, env={**os.environ, "JAX_COMPILATION_CACHE_DIR": str(cache)})
    return done, time.perf_counter() - started


def run_one(backend: str, seed: int, seconds: float, label: str, extra: list[str],
            cache: Path | None = None, cold: bool = False) -> dict[str, Any]:
    """``neurorun algo=pgpe env=brax::humanoid`` on ``backend``: first 2 generations with an
    empty jax compilation cache (what a first run pays to compile), then ``seconds`` of
    training from seed ``seed`` with that cache (what every later run pays); its record.
    With ``cache`` (a cache an earlier run filled), only the training; ``cold``: only the
    training, on an empty cache (a new user's first run, compiles included)."""
    folder = RUNS / label / f"{backend}_s{seed}"
    fresh = cache is None and not cold
    if cache is None:
        cache = RUNS / label / f"jax_cache_{backend}_s{seed}"
        shutil.rmtree(cache, ignore_errors=True)
    env = (["env=Humanoid-v5"] if backend == ENVPOOL else
           ["env=brax::humanoid", f"env.env_config.backend={backend}"])
    args = ["algo=pgpe", *env, f"seed={seed}", "checkpoint_every=0", *extra]
    load = [round(x, 2) for x in os.getloadavg()]
    if fresh:
        first, first_wall = _neurorun([*args, "generations=2", "max_time=null",
                                       f"hydra.run.dir={folder}_first"], cache)
    timed = [*args, f"max_time={seconds:g}", "generations=null", f"hydra.run.dir={folder}"]
    done, wall = _neurorun(timed, cache)
    record: dict[str, Any] = {"label": label, "backend": backend, "seed": seed,
                              "max_time": seconds, "args": " ".join(timed),
                              "load_average_at_start": load,
                              "wall_s": round(wall, 1), "exit": done.returncode}
    if fresh:
        record.update(first_two_generations_s=round(first_wall, 1),
                      first_exit=first.returncode)
    metrics = folder / "metrics.csv"
    if done.returncode != 0 or not metrics.is_file():
        record["error"] = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return record
    with metrics.open() as rows:
        curve = [{key: _number(row.get(key)) for key in CURVE_COLUMNS}
                 for row in csv.DictReader(rows)]
    evals = [point["center_eval"] for point in curve if point["center_eval"] is not None]
    last = curve[-1]
    record.update(generations=len(curve), interactions=int(last["total_interaction_count"]),
                  seconds=last["elapsed_s"],
                  steps_per_s=round(last["total_interaction_count"] / last["elapsed_s"]),
                  best_center_eval=round(max(evals), 1) if evals else None,
                  last_center_eval=round(evals[-1], 1) if evals else None,
                  first_episode_length=curve[0]["episode_length_mean"],
                  last_episode_length=last["episode_length_mean"], curve=curve)
    return record


def _number(value: str | None) -> float | None:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if number == number else None  # nan: not measured in that row


def summarize() -> dict[str, Any]:
    records = [json.loads(line) for line in LOG.read_text().splitlines() if line.strip()]
    rows = [{key: value for key, value in record.items() if key != "curve"}
            for record in records]
    report = write_result(RESULTS / "humanoid.json", runs=rows)
    _plot([record for record in records if record.get("curve")])
    return report


def _plot(records: list[dict[str, Any]]) -> None:
    from matplotlib.figure import Figure

    for column in ("center_eval", "episode_length_mean"):
        figure = Figure(figsize=(7, 4.5), layout="constrained")
        axes = figure.add_subplot()
        for record in records:
            points = [(p["elapsed_s"], p[column]) for p in record["curve"]
                      if p[column] is not None]
            if points:
                axes.plot(*zip(*points, strict=True), label=f"{record['label']} "
                          f"{record['backend']} s{record['seed']}")
        axes.set_xlabel("wall time (s)")
        axes.set_ylabel(column + (" (unshaped, 5 test episodes)" if column == "center_eval"
                                  else " (training episodes)"))
        axes.grid(alpha=0.3)
        axes.legend(fontsize="small")
        figure.suptitle("neurorun algo=pgpe env=brax::humanoid, per brax backend")
        figure.savefig(RESULTS / f"learning_brax_humanoid_{column}.png", dpi=90)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--seconds", type=float, default=300.0, help="max_time of each run")
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--label", default="default", help="names this setting in the results")
    parser.add_argument("--override", action="append", default=[],
                        help="one more override for every run (repeatable)")
    parser.add_argument("--cache", type=Path, help="a jax compilation cache an earlier run of "
                        "these shapes filled: train only (no first-run compile figure)")
    parser.add_argument("--cold", action="store_true", help="train on an empty compilation "
                        "cache, compiles included (a new user's first run)")
    parser.add_argument("--summary-only", action="store_true")
    args = parser.parse_args(argv)
    if not args.summary_only:
        RESULTS.mkdir(parents=True, exist_ok=True)
        for seed in (int(s) for s in args.seeds.split(",")):
            for backend in args.backends.split(","):
                record = run_one(backend, seed, args.seconds, args.label, args.override,
                                 args.cache, args.cold)
                with LOG.open("a") as log:
                    log.write(json.dumps(record) + "\n")
                print({k: v for k, v in record.items() if k != "curve"}, flush=True)
    return summarize()


TABLES = [  # (result file, title): what run.py's summary shows of this benchmark
    ("humanoid.json",
     "The headline, brax humanoid, per brax backend (`bench_humanoid.py`)"),
]


def table(report: dict) -> list[str]:
    lines = ["`neurorun algo=pgpe env=brax::humanoid` with `env.env_config.backend=<backend>` "
             "(`envpool`: `env=Humanoid-v5`, MuJoCo's humanoid), seed 0, each alone; first "
             "run: 2 generations on an empty jax compilation cache; then training for the "
             "budget on that cache (`--cold`: on an empty cache, compiles included); "
             "center_eval: the unshaped return of 5 seeded test episodes.", "",
             "| setting | backend | first run s | budget s | generations | counted steps/s | "
             "best center_eval | training episode length, first → last | load average |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in report["runs"]:
        lines.append(f"| {r['label']} | {r['backend']} | {r.get('first_two_generations_s', '–')}"
                     f" | {r['max_time']:g} | {r['generations']} | {r['steps_per_s']:,} | "
                     f"{r['best_center_eval']:,} | {r['first_episode_length']:.0f} → "
                     f"{r['last_episode_length']:.0f} | {r['load_average_at_start'][0]} |")
    return lines


if __name__ == "__main__":
    main()
