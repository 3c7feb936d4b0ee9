"""The compiled evaluation of two source trees side by side: counted steps/s, old against new.

    python benchmarks/bench_old_new.py --old <commit> [--rounds 3] [--full] [--envs ENV ...]

``--old`` is checked out into a temporary git worktree; the new tree is this one. Per case
(bench_jax.py's CPU cases on one device, bench_devices.py's on every core's host device) and
round, each tree runs ``old_new_side.py`` in a process of its own, one after the other (the
order alternates by round): it builds the case's Problem, evaluates one population (compiling,
or loading from the tree's own compilation cache, which its first round fills), then times
``--calls`` evaluations of fresh populations (the same seeds in both trees) and prints their
counted interactions per second. ``ratio`` is new over old per round, median and min-max.
Writes benchmarks/results/compiled_old_new.json (a failed case: its error) and exits 1 when a
case failed. Run it alone on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from harness import RESULTS, CaseFailedError, ratios, run_cases, spread, spread_text, write_result

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# (env, network, popsize, devices): bench_jax's CPU cases (1 device) and bench_devices' (auto)
CASES = [(env, net, popsize, 1) for env in ("playground::CheetahRun", "brax::ant")
         for net in ("linear", "mlp64") for popsize in (64, 256, 1024)] + [
    ("playground::HumanoidWalk", "linear", 256, 1), ("brax::humanoid", "linear", 256, 1)] + [
    (env, net, popsize, 0) for env in ("playground::CheetahRun", "brax::ant")
    for net in ("linear", "mlp64") for popsize in (256, 1024)] + [
    ("brax::humanoid", "linear", 256, 0)]
QUICK = [("brax::ant", "linear", 256, 1), ("playground::CheetahRun", "linear", 256, 1),
         ("brax::humanoid", "linear", 256, 0), ("brax::ant", "linear", 1024, 0)]


def side(tree: Path, cache: Path, case: tuple, calls: int) -> float:
    """Counted steps/s of ``tree``'s compiled evaluation on ``case`` (its own process)."""
    env, network, popsize, devices = case
    environ = {**os.environ, "PYTHONPATH": str(tree), "JAX_COMPILATION_CACHE_DIR": str(cache)}
    done = subprocess.run(
        [sys.executable, str(HERE / "old_new_side.py"), env, network, str(popsize),
         str(devices), str(calls)], env=environ, capture_output=True, text=True, check=False)
    if done.returncode:
        raise CaseFailedError(f"{tree}: {case} failed: {done.stderr[-2000:]}")
    return float(json.loads(done.stdout.strip().splitlines()[-1])["steps_per_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", required=True, help="the old tree's commit")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--full", action="store_true", help="every case (default: QUICK)")
    parser.add_argument("--envs", nargs="+", help="only the cases of these envs")
    args = parser.parse_args()
    cases = [case for case in (CASES if args.full else QUICK)
             if args.envs is None or case[0] in args.envs]
    with tempfile.TemporaryDirectory(prefix="old_new_") as scratch:
        old = Path(scratch) / "old"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(old),
                        args.old], check=True, capture_output=True)
        try:
            trees = {"old": old, "new": ROOT}

            def measure(case: tuple) -> dict[str, Any]:
                rates: dict[str, list[float]] = {"old": [], "new": []}
                for round_ in range(args.rounds):
                    for name in (("old", "new") if round_ % 2 == 0 else ("new", "old")):
                        cache = Path(scratch) / f"cache_{name}"
                        rates[name].append(side(trees[name], cache, case, args.calls))
                result = {"old_steps_per_s": spread(rates["old"], 0),
                          "new_steps_per_s": spread(rates["new"], 0),
                          "ratio": ratios(rates["new"], rates["old"])}
                print(json.dumps({"case": case, **result}), flush=True)
                return result

            def write(results: dict[tuple, Any]) -> None:
                rows = [{"env": env, "network": network, "popsize": popsize,
                         "devices": devices or "auto", **result}
                        for (env, network, popsize, devices), result in results.items()]
                write_result(RESULTS / "compiled_old_new.json", old=args.old,
                             rounds=args.rounds, calls=args.calls, results=rows)

            run_cases(cases, measure, write)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)],
                           check=False, capture_output=True)


TABLES = [  # (result file, title): what run.py's summary shows of this benchmark
    ("compiled_old_new.json",
     "The compiled evaluation, old tree against new (`bench_old_new.py`)"),
]


def table(report: dict) -> list[str]:
    lines = ["| env | network | popsize | devices | old counted steps/s | new counted steps/s "
             "| new ÷ old |", "|---|---|---|---|---|---|---|"]
    for r in report["results"]:
        lines.append(f"| {r['env']} | {r['network']} | {r['popsize']:,} | {r['devices']} | "
                     f"{spread_text(r['old_steps_per_s'], 0, True)} | "
                     f"{spread_text(r['new_steps_per_s'], 0, True)} | {spread_text(r['ratio'])} |")
    return lines + ["", f"Old: commit {report['old']}; {report['rounds']} alternating rounds "
                    f"of {report['calls']} evaluations each, every tree in its own process."]


if __name__ == "__main__":
    main()
