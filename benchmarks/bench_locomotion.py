"""MuJoCo locomotion against the ARS paper's thresholds (``make bench-learning``).

    python benchmarks/bench_locomotion.py [--full] [--tasks swimmer,hopper]
        [--algos preset,pgpe] [--seeds 0,1,2] [--cap-scale 1.0] [--summary-only]

Default: the presets on Swimmer, Hopper and HalfCheetah, 3 seeds (about 30 minutes at most).
``--full`` (``make bench-learning``, hours; the seeds of README's table): the presets of those
three on seeds 0-9, every other algorithm of ALGO_SETTINGS and ``evotorch_pgpe`` on them with
seeds 0-2, the PGPE presets (``hopper_pgpe``, ``halfcheetah_pgpe``, ``walker2d_pgpe``),
``walker2d``, ``ant``, ``humanoid`` and ``humanoid_ars`` on seeds 0-2 (about 15 hours), and
``env_only`` (a bare ``neurorun env=<Env>``) on the five tasks, seed 0.
``--longer SECONDS`` continues runs already logged past their cap: each (task, algo, seed)
folder is copied to ``<folder>_to<SECONDS>s`` and resumed there (``neurorun resume=<copy>
max_time=SECONDS``, bit for bit the run that had no cap until then), or, where the folder is
gone, run again there from the start with the longer cap (the same seed: the same generations
on the same code and CPU; MuJoCo's results differ across CPUs); the
figures go to ``locomotion_longer.jsonl`` and locomotion.json's ``longer`` rows (the capped
rows stay as run).

Each run is ``neurorun experiment=<task> seed=S max_time=<cap>`` (``preset``: the task's
preset as shipped; ``ars_v1`` / ``ars_v2``: it without / with observation normalization;
``normalized``: a PGPE preset with normalized fitness instead of centered ranks; ``clipup``:
``humanoid`` with the ClipUp settings it shipped until 2026-11-30) or
``neurorun env=<Env> problem.observation_normalization=true <ALGO_SETTINGS> ...`` (the other
algorithms, on the env preset's reward shift and target), through ``neurorun.loop.runner.run``, the
path of the ``neurorun`` command, on the default backend (EnvPool, both cores). A run is
solved at the first center evaluation (5 seeded test episodes, the env's own return) that
reaches the threshold of Mania, Guy & Recht 2018, Table 1. Every finished run is appended at once to
``benchmarks/results/locomotion_runs.jsonl`` (a cut session keeps its figures); the summary
(``locomotion.json``: per task and algorithm the solved fraction, median episodes, env steps
and wall time to the threshold over solved runs, final scores) and the curves
(``learning_<Task>_{interactions,time}.png``, one line per seed) are rebuilt from that file.
For each solved preset run, ``neurorun-eval`` re-evaluates the best policy in a fresh process
on the same 5 seeded episodes; the score it prints is stored beside the run's own.

``evotorch_pgpe``: EvoTorch 0.6.1 (benchmarks/.venv-evotorch, see bench_evotorch.py) runs the
``pgpe`` setup, read from the same composed config (popsize, step sizes, ClipUp, radius,
ranking, network, observation normalization, reward shift, 5 center-evaluation episodes), as
GymNE in one process, under the same cap. ``evotorch`` in locomotion.json compares it with
``pgpe`` seed by seed: the wall time each side took to the lower of the two best center
scores (the threshold when both solved), and their ratio.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
from bench_evotorch import EvoTorchSide, ensure_venv
from bench_learning import RESULTS, curve_names, plot_curves, run_folder
from harness import write_result

from neurorun.tools.runs import Run

RUNS = Path(__file__).resolve().parent.parent / "runs" / "bench_locomotion"
LOG = RESULTS / "locomotion_runs.jsonl"
LONGER_LOG = RESULTS / "locomotion_longer.jsonl"
# task -> (env id, ARS threshold, wall-time cap in s, ARS paper V2-t median episodes)
# (Mania et al. 2018, Table 1: medians of 3 seeds on the v1 MuJoCo envs; v5 differs in details)
TASKS: dict[str, tuple[str, float, float, int]] = {
    # more presets of one env (experiment=<task>) sit beside it; their caps: 2x the ARS
    # preset's on Hopper and HalfCheetah (the PGPE target), 30 min on Walker2d, 45 min
    # on Ant, 60 min on Humanoid (both presets)
    "swimmer": ("Swimmer-v5", 325, 120, 427),
    "hopper": ("Hopper-v5", 3120, 300, 1973),
    "hopper_pgpe": ("Hopper-v5", 3120, 600, 1973),
    "halfcheetah": ("HalfCheetah-v5", 3430, 180, 1707),
    "halfcheetah_pgpe": ("HalfCheetah-v5", 3430, 360, 1707),
    "walker2d": ("Walker2d-v5", 4390, 1800, 24000),
    "walker2d_pgpe": ("Walker2d-v5", 4390, 1800, 24000),
    "ant": ("Ant-v5", 3580, 2700, 20800),
    "humanoid": ("Humanoid-v5", 6000, 3600, 142600),
    "humanoid_ars": ("Humanoid-v5", 6000, 3600, 142600),
}
# `preset`, `ars_v1`, `ars_v2`, `normalized` and `clipup` run the task's experiment preset
# (with their overrides); the others run the task's
# env preset (reward shift, target) with observation normalization and these settings;
# `env_only` is `neurorun env=<Env>` with nothing else (the defaults plus the env preset, under
# its own time budget; --cap-scale still scales it).
ON_THE_EXPERIMENT = ("preset", "ars_v1", "ars_v2", "normalized", "clipup")
# settings tried on one task, not in --full's matrix
ONE_TASK = ("clipup", "normalized")
ALGO_SETTINGS: dict[str, list[str]] = {
    "preset": [],
    "ars_v1": ["problem.observation_normalization=false"],  # the preset, raw observations
    "ars_v2": ["problem.observation_normalization=true"],  # the preset, normalized ones
    # a PGPE preset weighing (return - mean) / stdev, as ARS weighs return differences, instead
    # of centered ranks (experiment=humanoid's choice); tried on walker2d_pgpe
    "normalized": ["algo.ranking_method=normalized"],
    "env_only": [],
    # Salimans et al. 2017: sigma 0.02, Adam 0.01, l2coeff 0.005 (the neurorun/conf/algo defaults)
    "openai_es": ["algo=openai_es", "algo.popsize=40", "eval_every=1"],
    # ClipUp's published MuJoCo setup (as in EvoTorch's examples) without the adaptive popsize
    "pgpe": ["algo=pgpe", "algo.popsize=40", "algo.center_learning_rate=0.01125",
             "algo.optimizer_config.max_speed=0.015", "algo.radius_init=0.27", "eval_every=1"],
    "snes": ["algo=snes", "algo.popsize=40", "algo.radius_init=null", "algo.stdev_init=0.05",
             "eval_every=1"],
    "sep_cmaes": ["algo=sep_cmaes", "algo.popsize=40", "algo.radius_init=null",
                  "algo.stdev_init=0.05", "eval_every=1"],
    "cem": ["algo=cem", "algo.popsize=40", "algo.parenthood_ratio=0.25", "algo.radius_init=null",
            "algo.stdev_init=0.05", "algo.stdev_min=0.005", "eval_every=1"],
    # experiment=humanoid's settings until 2026-11-30, PGPE + ClipUp on ARS's budget: the
    # stdev learned, ClipUp's speed 0.1 (lr 0.75 x speed); run on that experiment
    "clipup": ["algo.stdev_min=null", "algo.stdev_max=null", "algo.optimizer=clipup",
               "algo.optimizer_config={max_speed:0.1}", "algo.center_learning_rate=0.075"],
}


def run_task(task: str, algo: str, seed: int, cap_scale: float,
             folder: Path | None = None) -> dict[str, Any]:
    env, threshold, cap, _ = TASKS[task]
    if algo == "evotorch_pgpe":
        figures = run_evotorch(env, threshold, seed, cap * cap_scale)
        return {"task": task, "env": env, "algo": algo, "seed": seed,
                "max_time": cap * cap_scale, **figures}
    start = ([f"experiment={task}"] if algo in ON_THE_EXPERIMENT else [f"env={env}"] if
             algo == "env_only" else [f"env={env}", "problem.observation_normalization=true",
                                      "generations=100000"])  # the cap stops it, as presets
    if algo == "env_only":  # the env preset's own budget, as the user gets it
        from neurorun.cli.app import compose_config

        cap = float(compose_config([f"env={env}"]).max_time)
    args = [*start, *ALGO_SETTINGS[algo], f"seed={seed}",
            f"max_time={cap * cap_scale:g}", f"target_score={threshold}", "checkpoint_every=0",
            "logger.console.quiet=true"]
    folder = folder or RUNS / env / f"{_label(task, algo)}_s{seed}"
    figures = run_folder(args, folder, ["=".join(_curve_group(task, algo)), f"seed={seed}"])
    record = {"task": task, "env": env, "algo": algo, "seed": seed, "max_time": cap * cap_scale,
              "args": " ".join(args), "load_average": [round(x, 2) for x in os.getloadavg()],
              **figures}
    if figures["solved"] and algo == "preset":
        record["neurorun_eval"] = _eval_in_fresh_process(folder, seed)
    with (folder / "metrics.csv").open() as metrics:  # the pictures need no run folder
        record["curve"] = _curve_points(list(csv.DictReader(metrics)))
    return record


def run_longer(task: str, algo: str, seed: int, cap: float) -> dict[str, Any]:
    """The logged run of (task, algo, seed) continued to ``cap`` seconds in all: its folder
    copied and resumed, or, where the folder is gone, run again from the start with that cap
    (the same seed: on the same code and CPU, the capped run is this one cut short)."""
    env, threshold, _, _ = TASKS[task]
    before = next((r for r in load_records() if (r["task"], r["algo"], r["seed"]) ==
                   (task, algo, seed)), None)
    if before is None:
        raise SystemExit(f"--longer: no logged run of {task} {algo} seed {seed} in {LOG}")
    source = RUNS / env / f"{_label(task, algo)}_s{seed}"
    folder = source.with_name(f"{source.name}_to{cap:g}s")
    cap_fields = {"table_cap": before["max_time"], "resumed": source.is_dir()}
    if not source.is_dir():
        return {**run_task(task, algo, seed, cap / TASKS[task][2], folder=folder), **cap_fields}
    if not folder.is_dir():  # a copy that exists is a longer run under way (resumed again)
        shutil.copytree(source, folder)
    command = [str(Path(sys.executable).with_name("neurorun")), f"resume={folder}",
               f"max_time={cap:g}", "checkpoint_every=10"]
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    with (folder / "metrics.csv").open() as metrics:
        rows = list(csv.DictReader(metrics))
    curve = _curve_points(rows)
    evals = [point["center_eval"] for point in curve]
    reached = next((row for row in rows if row["center_eval"] not in ("", "nan")
                    and float(row["center_eval"]) >= threshold), None)
    last = reached or rows[-1]
    record = {"task": task, "env": env, "algo": algo, "seed": seed, "max_time": cap, **cap_fields,
              "args": " ".join(command[1:]),
              "load_average": [round(x, 2) for x in os.getloadavg()], "wall_s": round(wall, 2),
              "solved": reached is not None, "seconds": round(float(last["elapsed_s"]), 2),
              "interactions": int(last["total_interaction_count"]),
              "episodes": int(last["total_episode_count"]),
              "generations": int(last["generation"]), "center_eval": evals[-1],
              "best_center_eval": max(evals)}
    if reached is not None and algo == "preset":
        record["neurorun_eval"] = _eval_in_fresh_process(folder, seed)
    return {**record, "curve": curve}


def _label(task: str, algo: str) -> str:
    """A run folder's name before its seed: the algorithm, with the preset's own name for the
    extra presets of an env (`hopper_pgpe_preset`)."""
    return f"{task}_{algo}" if "_" in task else algo


def _curve_group(task: str, algo: str) -> tuple[str, str]:
    """The override that names a run's group in the pictures: each preset its own color."""
    return ("experiment", task) if algo == "preset" else ("algo", _label(task, algo))


def run_evotorch(env: str, threshold: float, seed: int, max_time: float) -> dict[str, Any]:
    """The ``pgpe`` setup on EvoTorch's GymNE until ``threshold`` or ``max_time``."""
    from omegaconf import OmegaConf

    from neurorun.cli.app import compose_config

    cfg = compose_config([f"env={env}", "problem.observation_normalization=true",
                          *ALGO_SETTINGS["pgpe"]])
    algo = OmegaConf.to_container(cfg.algo, resolve=True)
    pgpe = {key: algo[key] for key in ("center_learning_rate", "stdev_learning_rate",
                                       "radius_init", "optimizer", "optimizer_config",
                                       "ranking_method", "stdev_max_change", "symmetric")}
    side = EvoTorchSide(ensure_venv(), threads=int(cfg.torch_threads))
    try:
        result = side.request({
            "mode": "threshold", "env": env, "network": cfg.network.spec, "seed": seed,
            "popsize": algo["popsize"], "pgpe": pgpe, "threshold": threshold,
            "max_time": max_time, "eval_episodes": int(cfg.eval_episodes),
            "observation_normalization": bool(cfg.problem.observation_normalization),
            "decrease_rewards_by": float(cfg.problem.decrease_rewards_by),
            "episode_length": cfg.problem.episode_length})
    finally:
        side.close()
    if "error" in result:
        raise RuntimeError(f"EvoTorch on {env}: {result['error']}")
    curve, last = result["curve"], result["curve"][-1]
    return {"solved": result["solved"], "seconds": last["seconds"],
            "interactions": last["interactions"], "episodes": last["episodes"],
            "generations": len(curve), "center_eval": last["center_eval"],
            "best_center_eval": max(point["center_eval"] for point in curve), "curve": curve}


def _neurorun_curve(record: dict[str, Any]) -> list[dict[str, float]] | None:
    """(seconds, interactions, center_eval) per evaluated generation: the record's own curve,
    else the run's metrics.csv (None: neither, e.g. a record older than stored curves whose run
    folder is gone)."""
    if "curve" in record:
        return record["curve"]
    path = (RUNS / record["env"] / f"{_label(record['task'], record['algo'])}_s{record['seed']}"
            / "metrics.csv")
    if not path.is_file():
        return None
    with path.open() as metrics:
        return _curve_points(list(csv.DictReader(metrics)))


def _curve_points(rows: list[dict[str, str]]) -> list[dict[str, float]]:
    """The curve of metrics.csv's rows: the generations that evaluated the center."""
    return [{"seconds": round(float(row["elapsed_s"]), 2),
             "interactions": int(row["total_interaction_count"]),
             "center_eval": round(float(row["center_eval"]), 1)}
            for row in rows if row["center_eval"] not in ("", "nan")]


def _seconds_to(curve: list[dict[str, float]], score: float) -> float | None:
    return next((p["seconds"] for p in curve if p["center_eval"] >= score), None)


def compare_evotorch(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per task and seed run by both: seconds to the lower of the two best center scores."""
    rows = []
    earlier = {(row["task"], row["seed"]): row for row in
               (json.loads((RESULTS / "locomotion.json").read_text()).get("evotorch", [])
                if (RESULTS / "locomotion.json").is_file() else [])}
    for theirs in (r for r in records if r["algo"] == "evotorch_pgpe"):
        ours = next((r for r in records if r["algo"] == "pgpe" and r["task"] == theirs["task"]
                     and r["seed"] == theirs["seed"]), None)
        if ours is None:
            continue
        common = min(ours["best_center_eval"], theirs["best_center_eval"])
        curve = _neurorun_curve(ours)
        if curve is None:  # keep what was computed while the run folder was there
            if (theirs["task"], theirs["seed"]) in earlier:
                rows.append(earlier[(theirs["task"], theirs["seed"])])
            continue
        ours_s = _seconds_to(curve, common)
        theirs_s = _seconds_to(theirs["curve"], common)
        rows.append({"task": theirs["task"], "seed": theirs["seed"], "score": common,
                     "neurorun_s": ours_s, "evotorch_s": theirs_s,
                     "speedup": round(theirs_s / ours_s, 2) if ours_s and theirs_s else None,
                     "neurorun_best": ours["best_center_eval"],
                     "evotorch_best": theirs["best_center_eval"],
                     "neurorun_solved": ours["solved"], "evotorch_solved": theirs["solved"]})
    return rows


def _eval_in_fresh_process(folder: Path, seed: int) -> float:
    """The mean return neurorun-eval reports for the best policy on the 5 test episodes that
    scored it during the run (their seeds start at derive_seed(seed, "evaluation"))."""
    from neurorun.common.seeding import derive_seed

    command = [str(Path(sys.executable).with_name("neurorun-eval")), str(folder), "--episodes",
               "5", "--seed", str(derive_seed(seed, "evaluation")), "--json"]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return round(float(json.loads(output)["return_mean"]), 1)


def summarize(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (task, algorithm): solved fraction and medians over solved runs."""
    rows = []
    for task, (env, threshold, _, paper) in TASKS.items():
        for algo in [*ALGO_SETTINGS, "evotorch_pgpe"]:
            runs = [r for r in records if r["task"] == task and r["algo"] == algo]
            if not runs:
                continue
            solved = [r for r in runs if r["solved"]]

            def median(key: str, among: list[dict[str, Any]] = solved) -> float | None:
                values = [r[key] for r in among if r[key] is not None]
                return round(statistics.median(values), 1) if values else None

            def worst(key: str, among: list[dict[str, Any]] = solved) -> float | None:
                """The largest over solved runs (an unsolved run counts as not solved)."""
                values = [r[key] for r in among if r[key] is not None]
                return max(values) if values else None

            rows.append({"task": task, "env": env, "algo": algo, "threshold": threshold,
                         "max_time": runs[0]["max_time"], "solved": len(solved),
                         "runs": len(runs), "seeds": sorted(r["seed"] for r in runs),
                         "median_episodes": median("episodes"),
                         "worst_episodes": worst("episodes"), "worst_s": worst("seconds"),
                         "median_interactions": median("interactions"),
                         "median_s": median("seconds"), "paper_episodes": paper,
                         "median_final": median("center_eval", runs),
                         "median_best": median("best_center_eval", runs),
                         "best_center_evals": [r["best_center_eval"] for r in solved],
                         "neurorun_eval": [r.get("neurorun_eval") for r in solved]})
    return rows


def load_records(log: Path = LOG) -> list[dict[str, Any]]:
    """Every run logged so far; a later run of the same (task, algo, seed) replaces earlier."""
    latest: dict[tuple, dict[str, Any]] = {}
    if log.exists():
        for line in log.read_text().splitlines():
            record = json.loads(line)
            latest[(record["task"], record["algo"], record["seed"])] = record
    return list(latest.values())


def _curve_runs(records: list[dict[str, Any]]) -> tuple[list[Run], str]:
    """The records' curves as runs for the pictures, and a line naming the records that have
    none (logged before curves were stored, their run folders gone)."""
    columns = {"total_interaction_count": "interactions", "elapsed_s": "seconds",
               "center_eval": "center_eval"}  # metrics.csv column -> curve field
    runs, missing = [], []
    for record in records:
        key, value = _curve_group(record["task"], record["algo"])
        curve = _neurorun_curve(record)
        if not curve:
            missing.append(f"{key}={value}")
            continue
        metrics = {column: np.array([point[field] for point in curve], dtype=float)
                   for column, field in columns.items()}
        runs.append(Run(Path(f"{value}_s{record['seed']}"), metrics,
                        {key: value, "seed": str(record["seed"])},
                        settings={"env.id": record["env"], key: value}))
    counts = ", ".join(f"{label} ×{missing.count(label)}" for label in dict.fromkeys(missing))
    return runs, (textwrap.fill(f"not drawn (runs logged without their curve): {counts}", 100)
                  if missing else "")


def report() -> dict[str, Any]:
    records, longer = load_records(), load_records(LONGER_LOG)
    plots = []
    for name, among in (("", records), ("_longer", longer)):
        for env, threshold in dict.fromkeys(TASKS[r["task"]][:2] for r in among):
            runs, note = _curve_runs([r for r in among if r["env"] == env])
            if runs:  # an env none of whose records has a curve keeps its earlier pictures
                plots += plot_curves(env + name, runs, threshold, note)
    # each run has its own load average; the machine's as this summary is written says nothing
    return write_result(RESULTS / "locomotion.json", load_average=None,
                        results=summarize(records),
                        evotorch=compare_evotorch(records), plots=plots,
                        longer=[{**{k: v for k, v in r.items() if k != "curve"},
                                 "threshold": TASKS[r["task"]][1]} for r in longer])


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="the whole matrix (hours)")
    parser.add_argument("--tasks", default="swimmer,hopper,halfcheetah")
    parser.add_argument("--algos", default="preset")
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated seeds")
    parser.add_argument("--cap-scale", type=float, default=1.0,
                        help="multiply every task's wall-time cap (e.g. 0.5 for a quick look)")
    parser.add_argument("--longer", type=float, metavar="SECONDS",
                        help="continue the logged runs of --tasks/--algos/--seeds to this cap")
    parser.add_argument("--summary-only", action="store_true",
                        help="rebuild locomotion.json and the curves from the logged runs")
    args = parser.parse_args(argv)
    if args.summary_only:
        return report()
    if args.longer:
        for task in args.tasks.split(","):
            for algo in args.algos.split(","):
                for seed in (int(s) for s in args.seeds.split(",")):
                    record = run_longer(task, algo, seed, args.longer)
                    with LONGER_LOG.open("a") as log:
                        log.write(json.dumps(record) + "\n")
        return report()
    plan = [(args.tasks, args.algos, args.seeds)]
    if args.full:  # the seeds of README's table
        matrix = [a for a in ALGO_SETTINGS if a not in ("preset", "env_only", *ONE_TASK)]
        plan = [("swimmer,hopper,halfcheetah", "preset", ",".join(map(str, range(10)))),
                ("swimmer,hopper,halfcheetah", ",".join([*matrix, "evotorch_pgpe"]), "0,1,2"),
                ("hopper_pgpe,halfcheetah_pgpe,walker2d,walker2d_pgpe,ant,humanoid,"
                 "humanoid_ars", "preset", "0,1,2"),
                ("swimmer,hopper,halfcheetah,walker2d,ant", "env_only", "0")]
    LOG.parent.mkdir(parents=True, exist_ok=True)
    for tasks, algos, seeds in plan:
        for seed in (int(s) for s in seeds.split(",")):
            for task in tasks.split(","):
                for algo in algos.split(","):
                    record = run_task(task, algo, seed, args.cap_scale)
                    print(json.dumps(record), flush=True)
                    with LOG.open("a") as log:
                        log.write(json.dumps(record) + "\n")
    return report()


TABLES = [  # (result file, title): what run.py's summary shows of this benchmark
    ("locomotion.json",
     "MuJoCo locomotion against the ARS paper (`make bench-learning`): training episodes, env "
     "steps and wall time to the threshold; medians and worst over the solved runs, each run "
     "alone on the machine"),
]


def _algorithm(row: dict) -> str:
    """A locomotion row's algorithm: the experiment preset it ran, or bench_locomotion's name
    of the settings on the env preset."""
    if row["algo"] == "env_only":
        return f"`env={row['env']}` alone"
    return f"`experiment={row['task']}`" if row["algo"] == "preset" else row["algo"]


def table(report: dict) -> list[str]:
    lines = ["| task (threshold) | algorithm | solved (seeds) | median episodes (ARS paper V2-t) | "
             "worst episodes | median env steps | median / worst wall s | "
             "median last / best center_eval | neurorun-eval of solved runs |",
             "|---|---|---|---|---|---|---|---|---|"]

    def cell(value, digits=","):
        return "–" if value is None else format(value, digits)

    for r in report["results"]:
        pairs = zip(r["neurorun_eval"], r["best_center_evals"], strict=True)
        checks = ", ".join(f"{e:,.0f} vs {b:,.0f}" for e, b in pairs if e is not None) or "–"
        seeds = r.get("seeds") or []
        shown = (f"{min(seeds)}–{max(seeds)}" if len(seeds) > 2 and seeds == list(
            range(min(seeds), max(seeds) + 1)) else ", ".join(map(str, seeds))) if seeds else "?"
        lines.append(
            f"| {r['env']} (≥ {r['threshold']:,}) | {_algorithm(r)} | {r['solved']}/{r['runs']} "
            f"(seeds {shown}, cap {r['max_time']:.0f} s) | {cell(r['median_episodes'], ',.0f')} "
            f"({r['paper_episodes']:,}) | {cell(r.get('worst_episodes'), ',.0f')} | "
            f"{cell(r['median_interactions'], ',.0f')} | "
            f"{cell(r['median_s'])} / {cell(r.get('worst_s'), ',.1f')} | "
            f"{cell(r['median_final'], ',.0f')} / "
            f"{cell(r['median_best'], ',.0f')} | {checks} |")
    return (lines + evotorch_locomotion_lines(report.get("evotorch", []))
            + longer_locomotion_lines(report.get("longer", [])) + curve_names(report))


def longer_locomotion_lines(rows: list[dict]) -> list[str]:
    """Runs continued past the table's cap (`bench_locomotion.py --longer`)."""
    if not rows:
        return []
    lines = ["", "Runs of the table continued past its cap (`bench_locomotion.py --longer`: the "
             "run's folder copied and resumed, bit for bit the run without that cap, or run "
             "again from the start with the longer cap where the folder was gone: the same "
             "seed), each alone; wall s: to the threshold, else the new cap.", "",
             "| task (threshold) | algorithm | seed | cap s (table's) | how | solved | wall s | "
             "episodes | env steps | last / best center_eval | load average at the end |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['env']} (≥ {r['threshold']:,}) | {_algorithm(r)} | "
            f"{r['seed']} | {r['max_time']:.0f} ({r['table_cap']:.0f}) | "
            f"{'resumed' if r['resumed'] else 'run again'} | "
            f"{'yes' if r['solved'] else 'no'} | {r['seconds']:,.0f} | {r['episodes']:,} | "
            f"{r['interactions']:,} | {r['center_eval']:,.0f} / {r['best_center_eval']:,.0f} | "
            f"{r['load_average'][0]} |")
    return lines


THRESHOLDS = {"swimmer": 325, "hopper": 3120, "halfcheetah": 3430}  # the ARS paper's


def evotorch_locomotion_lines(rows: list[dict]) -> list[str]:
    """`pgpe` against EvoTorch running the same setup: seconds to the same center score, where
    that score is at least a tenth of the threshold (below it, a side did not learn)."""
    if not rows:
        return []
    lines = ["", "The `pgpe` setup on EvoTorch 0.6.1 (`evotorch_pgpe`: GymNE, one process), "
             "seed by seed: wall seconds to the lower of the two sides' best center scores "
             "(the threshold when both solved), compared only where that score is at least "
             "a tenth of the threshold.", "",
             "| task | seed | score | neurorun s | EvoTorch s | × faster | best: neurorun / "
             "EvoTorch |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        learned = r["score"] >= 0.1 * THRESHOLDS.get(r["task"], 0)
        if not learned:
            side = "EvoTorch" if r["evotorch_best"] <= r["neurorun_best"] else "neurorun"
            compared = f"– | – | – ({side} did not learn)"
        else:
            speedup = "–" if r["speedup"] is None else f"**{r['speedup']}×**"
            compared = f"{r['neurorun_s']} | {r['evotorch_s']} | {speedup}"
        lines.append(f"| {r['task']} | {r['seed']} | {r['score']:,.0f} | {compared} | "
                     f"{r['neurorun_best']:,.0f} / {r['evotorch_best']:,.0f} |")
    return lines


if __name__ == "__main__":
    main()
