"""Run every benchmark, then write every result's table into benchmarks/results/SUMMARY.md
(docs/benchmarks.md holds the tables that answer a question, written by hand from them).

    python benchmarks/run.py [--full]

The GPU benchmarks (bench_gpu.py and bench_jax.py on CUDA, ``make bench-gpu``) run on their own,
where a GPU is; their results join the summary once benchmarks/results/gpu.json and
jax_envs_gpu.json exist.

Each `bench_*.py` runs in its own process (thread settings and imports do not leak between
them) and writes its JSON to benchmarks/results/. `--full` passes `--full` to those that
have a longer mode. Each owns its tables: `TABLES` (result file, title) and `table(report)`,
which the summary imports once every script has run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
# script, extra arguments with --full
SCRIPTS = [("bench_algorithms.py", []), ("bench_nets.py", []), ("bench_eval.py", ["--full"]),
           ("bench_evotorch.py", ["--full"]), ("bench_learning.py", ["--full", "--jobs", "2"]),
           ("bench_ray.py", []), ("bench_envpool.py", ["--full"]),
           ("bench_restarts.py", []), ("bench_jax.py", []), ("bench_devices.py", []),
           ("bench_first_generation.py", ["--full"]), ("bench_humanoid.py", []),
           ("bench_locomotion.py", ["--full"])]
# bench_jax, bench_devices: ~15 minutes of cold jax compiles each; bench_humanoid: ~45 minutes;
# bench_restarts: ~15 minutes (its `same` case spends whole budgets); bench_locomotion: hours
# (also `make bench-learning`)
FULL_ONLY = {"bench_jax.py", "bench_devices.py", "bench_humanoid.py", "bench_locomotion.py",
             "bench_restarts.py", "bench_first_generation.py"}


def run_scripts(full: bool) -> None:
    for script, full_args in SCRIPTS:
        if script in FULL_ONLY and not full:
            continue
        print(f"== {script}", flush=True)
        args = full_args if full else []
        subprocess.run([sys.executable, str(HERE / script), *args], check=True)


def _load(name: str) -> dict | None:
    path = RESULTS / name
    return json.loads(path.read_text()) if path.exists() else None


def summary(measured: bool) -> str:
    """SUMMARY.md's text: every table of benchmarks/results. ``measured``: the benchmarks ran
    just now (else the tables are rebuilt from results written earlier, each dated where its
    result records when it was measured)."""
    date = dt.date.today().isoformat()
    machine = f"{platform.machine()}, {platform.processor() or 'cpu'}, {_cores()} cores"
    learning = _load("learning.json") or {}
    command = "make bench-full" if learning.get("full") else "make bench"
    parts = [f"Measured {date} on {machine} with `{command}`." if measured else
             f"Rebuilt {date} from the results of `{command}` (not measured then: each "
             "table's date is beside its title where its result records one).", ""]
    tabled = [script for script, _ in SCRIPTS] + ["bench_old_new.py", "bench_humanoid_steps.py",
                                                   "bench_pair_seeds.py", "bench_action_bounds.py",
                                                   "bench_gpu.py"]
    for script in tabled:
        try:
            module = importlib.import_module(Path(script).stem)
        except ImportError as error:  # its tables need what it measures (envpool, jax, ...)
            parts += [f"**{script}**: its tables need {error.name}, not installed here.", ""]
            continue
        for name, title in module.TABLES:
            report = _load(name)
            if report is not None:
                when = ""
                if "date" in report:  # ray.json: the load of each case, in its table
                    load = None if "case_load_average" in report else report.get("load_average")
                    date = report["date"][:10]
                    if "cases_measured" in report:  # envpool.json after --training-only
                        date, load = report["cases_measured"], report["cases_load_average"]
                    when = f" (measured {date}" + (
                        f", load average {load[0]}" if load else "") + ")"
                parts += [f"**{title}**{when}", "", *module.table(report), ""]
    if _load("gpu.json") is None:
        parts += [importlib.import_module("bench_gpu").GPU_PENDING, ""]
    return "\n".join(parts).rstrip() + "\n"


def _cores() -> int:
    return os.cpu_count() or 1


def write_summary(measured: bool) -> None:
    text = summary(measured)
    (RESULTS / "SUMMARY.md").write_text(text)
    print(text)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="the longer benchmark set")
    parser.add_argument("--summary-only", action="store_true",
                        help="only rebuild SUMMARY.md from existing results")
    args = parser.parse_args(argv)
    RESULTS.mkdir(parents=True, exist_ok=True)
    if not args.summary_only:
        run_scripts(args.full)
    write_summary(measured=not args.summary_only)


if __name__ == "__main__":
    main()
