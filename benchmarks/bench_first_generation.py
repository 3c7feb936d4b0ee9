"""Time to the first generation of jax runs, against the bare program of the same batch.

    python benchmarks/bench_first_generation.py [--rounds 3] [--cases headline ant ...]

Per case and round, each as a whole process from its start:

- ``neurorun``: the command as a user types it, with ``generations=3``; timed to the moment
  its generation-1 row is printed (plain console); the run must then finish its three
  generations (a run that fails after its first is a failed case, not a time);
- ``bare``: ``first_generation_bare.py``: jax and the simulator alone, one jitted program
  (reset of the same number of envs split over the same devices, 1,000 steps of a policy of
  the same size, masked return sums), timed to its result.

``cold``: both with an empty jax compilation cache of their own (a fresh folder each round);
``warm``: both again on the cache their cold run filled. The ratio is per round, neurorun's
time over the bare program's, reported as its median and min-max spread; with it the number
of physics programs neurorun compiled (its "compiling the ... program" lines) and the seconds
they took. Writes benchmarks/results/first_generation.json (a failed case: its error) and exits
1 when a case failed. Run it alone on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness import RESULTS, CaseFailedError, ratios, run_cases, spread, spread_text, write_result

from neurorun.config.saved_yaml import read_config
from neurorun.record.layout import saved_config_path

HERE = Path(__file__).resolve().parent
NEURORUN = Path(sys.executable).with_name("neurorun")
# name: (neurorun's overrides, the bare program's arguments: the same env; its --envs is the
# popsize of the run neurorun just made, read from that run's saved config)
CASES = {
    "headline": (["algo=pgpe", "env=brax::humanoid"], ["brax::humanoid", "--backend", "spring"]),
    "brax_ant": (["env=brax::ant"], ["brax::ant"]),
    "cheetah_run": (["env=playground::CheetahRun"], ["playground::CheetahRun"]),
    "experiment_brax_humanoid": (
        ["experiment=brax_humanoid"], ["brax::humanoid", "--backend", "spring", "--hidden", "64"]),
}
QUICK = ("headline", "brax_ant", "cheetah_run")
GENERATIONS = 3  # the run goes on past its first generation, which it is timed to
ROW = re.compile(r"^\s+1\s+-?\d")  # the plain console's generation-1 row
COMPILED = re.compile(r"compiled the (\w+) program of .* in (\d+) s")


def time_neurorun(overrides: list[str], cache: str, run_dir: Path) -> dict[str, Any]:
    """Seconds from the start of `neurorun <overrides> generations=3` to its generation-1 row,
    and the programs it compiled."""
    env = {**os.environ, "JAX_COMPILATION_CACHE_DIR": cache}
    command = [str(NEURORUN), *overrides, f"generations={GENERATIONS}", f"hydra.run.dir={run_dir}",
               "logger.console.plain=true", "logger.console.show_config=false"]
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    first, lines = None, []
    for line in process.stdout:
        lines.append(line)
        if first is None and ROW.match(line):
            first = time.perf_counter() - started
    if process.wait() != 0 or first is None or f"{GENERATIONS} of {GENERATIONS} done" not in \
            "".join(lines):
        raise CaseFailedError(f"{' '.join(command)} failed: {''.join(lines[-5:])}")
    compiles = [(kind, int(s)) for kind, s in COMPILED.findall("".join(lines))]
    return {"seconds": first, "programs": len(compiles),
            "compile_s": sum(s for _, s in compiles), "kinds": [k for k, _ in compiles],
            "popsize": int(read_config(saved_config_path(run_dir)).algo.popsize)}


def time_bare(arguments: list[str], cache: str) -> dict[str, Any]:
    """Seconds from the start of the bare program to its result, and what it printed."""
    env = {**os.environ, "JAX_COMPILATION_CACHE_DIR": cache}
    devices = len(os.sched_getaffinity(0))  # neurorun's problem.devices=auto on a CPU
    if "xla_force_host_platform_device_count" not in env.get("XLA_FLAGS", ""):
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_"
                            f"count={devices}").strip()
    started = time.perf_counter()
    done = subprocess.run([sys.executable, str(HERE / "first_generation_bare.py"), *arguments],
                          env=env, capture_output=True, text=True, check=True)
    seconds = time.perf_counter() - started
    return {"seconds": seconds, **json.loads(done.stdout.strip().splitlines()[-1])}


def measure(name: str, rounds: int) -> dict[str, Any]:
    overrides, bare = CASES[name]
    runs: dict[str, list[dict[str, Any]]] = {key: [] for key in
                                             ("neurorun_cold", "bare_cold", "neurorun_warm",
                                              "bare_warm")}
    for round_ in range(rounds):
        with tempfile.TemporaryDirectory() as mine, tempfile.TemporaryDirectory() as theirs, \
                tempfile.TemporaryDirectory() as folders:
            for warmth in ("cold", "warm"):
                runs[f"neurorun_{warmth}"].append(time_neurorun(
                    overrides, mine, Path(folders) / f"{warmth}_{round_}"))
                bare_arguments = [*bare, "--envs", str(runs[f"neurorun_{warmth}"][-1]["popsize"])]
                runs[f"bare_{warmth}"].append(time_bare(bare_arguments, theirs))
                print(name, round_, warmth, {key: round(value[-1]["seconds"], 1)
                                             for key, value in runs.items() if value},
                      flush=True)
    result: dict[str, Any] = {"neurorun_overrides": overrides, "bare_arguments": bare_arguments}
    for warmth in ("cold", "warm"):
        ours, theirs = runs[f"neurorun_{warmth}"], runs[f"bare_{warmth}"]
        result[warmth] = {
            "neurorun_s": spread([r["seconds"] for r in ours], 1),
            "bare_s": spread([r["seconds"] for r in theirs], 1),
            "ratio": ratios([r["seconds"] for r in ours], [r["seconds"] for r in theirs], 2),
            "programs": spread([r["programs"] for r in ours], 0),
            "program_kinds": ours[0]["kinds"],
            "neurorun_compile_s": spread([r["compile_s"] for r in ours], 0),
            "bare_compile_s": spread([r["compile_s"] for r in theirs], 1),
            "bare_run_s": spread([r["run_s"] for r in theirs], 1)}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cases", nargs="+", default=list(QUICK), choices=sorted(CASES))
    parser.add_argument("--full", action="store_true", help="every case")
    args = parser.parse_args()
    cases = sorted(CASES) if args.full else args.cases
    path = RESULTS / "first_generation.json"
    results = run_cases(cases, lambda name: measure(name, args.rounds),
                        lambda results: write_result(path, rounds=args.rounds, cases=results))
    print(json.dumps(results, indent=2))


TABLES = [  # (result file, title): what run.py's summary shows of this benchmark
    ("first_generation.json",
     "Time to the first generation of jax runs against a bare jitted program "
     "(`bench_first_generation.py`)"),
]


def table(report: dict) -> list[str]:
    lines = ["| case (neurorun's overrides) | cache | neurorun s to generation 1 | bare program "
             "s | neurorun ÷ bare (target) | physics programs neurorun compiled |",
             "|---|---|---|---|---|---|"]
    for name, case in report["cases"].items():
        for warmth, target in (("cold", 2.0), ("warm", 1.2)):
            r = case[warmth]
            lines.append(f"| {name} (`{' '.join(case['neurorun_overrides'])}`) | {warmth} | "
                         f"{spread_text(r['neurorun_s'], 1)} | {spread_text(r['bare_s'], 1)} | "
                         f"{spread_text(r['ratio'])} (≤ {target}) | "
                         f"{int(r['programs']['median'])} ({', '.join(r['program_kinds'])}) |")
    return lines + ["", f"Whole processes, median (min–max) over {report['rounds']} rounds, "
                    "each cold round with empty compilation caches of its own; the bare "
                    "program (`benchmarks/first_generation_bare.py`): jax and the simulator "
                    "alone, one jitted reset + 1,000-step scan of the same envs on the same "
                    "devices."]


if __name__ == "__main__":
    main()
