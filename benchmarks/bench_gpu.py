"""brax and Playground on a GPU (``make bench-gpu``): steps/s, compile time, GPU memory and
score after a fixed budget.

    python benchmarks/bench_gpu.py [--cases ant_evojax,ant_4096,...] [--smoke]

Every case is a ``neurorun`` run (``neurorun.loop.runner.run`` on the composed config) with
``problem.device=cuda``; the center is evaluated once, after the last generation, on seeded
test episodes without reward shaping (the score). Reported per case: generations,
popsize, total wall seconds, compile seconds (the first generation's time minus the median of
the others: jit compile and first resets), median steps/s over the generations after the
first, jax's peak GPU memory, and the score. (Throughput against the raw jitted step at popsize
1,024 / 4,096 / 16,384 is bench_jax.py with ``--device cuda``, which ``make bench-gpu`` runs
too.)

- ``ant_evojax``: EvoJAX's published brax ant PGPE run: popsize 1,024, 16 episodes per
  solution, a 4 x 32 tanh MLP with a tanh output, Adam (center lr 0.01), stdev lr 0.07, stdev
  0.04, obs normalization, 1,000-step episodes, 300 generations, the score a mean of 128 test
  episodes. EvoJAX reports 505 s and a score of 5,609 for it.
- ``ant_4096`` / ``humanoid_4096``: popsize 4,096, a 64-unit tanh MLP, PGPE + ClipUp with the
  step sizes of ``experiment=brax_humanoid``, 100 generations; the ant without its healthy
  reward (its env preset), the humanoid with that experiment's reward shaping.
- ``cheetahrun_4096`` / ``humanoidwalk_4096``: the same PGPE + ClipUp setup on MuJoCo
  Playground's CheetahRun and HumanoidWalk (Playground's default physics on a GPU), 100
  generations.
- ``brax_humanoid_30min``: ``experiment=brax_humanoid`` as shipped for 30 minutes, the center
  evaluated every 10 generations: the curve (metrics.csv in runs/bench_gpu/).

``--smoke`` runs every case on the CPU at popsize 8 for 2 generations of 20-step episodes:
it checks the script, not the figures. Writes benchmarks/results/gpu.json (smoke:
runs/bench_gpu/smoke.json, ignored by git).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

from harness import write_result

HERE = Path(__file__).resolve().parent
RUNS = HERE.parent / "runs" / "bench_gpu"
MLP_4X32 = ("Linear(obs_length, 32) >> Tanh() >> Linear(32, 32) >> Tanh() >> Linear(32, 32) >> "
            "Tanh() >> Linear(32, 32) >> Tanh() >> Linear(32, act_length) >> Tanh()")
PGPE_CLIPUP = ["algo=pgpe", "network=mlp", "network.network_args.hidden=64",
               "problem.observation_normalization=true", "algo.center_learning_rate=0.1125",
               "algo.radius_init=2.25", "algo.optimizer_config.max_speed=0.15"]
# case -> (overrides, generations, test episodes); generations None: the case sets max_time
CASES: dict[str, tuple[list[str], int | None, int]] = {
    "ant_evojax": ([
        "env=brax::ant", "algo=pgpe", "algo.popsize=1024", f"network.spec='{MLP_4X32}'",
        "algo.optimizer=adam", "~algo.optimizer_config.max_speed", "algo.center_learning_rate=0.01",
        "algo.stdev_learning_rate=0.07", "algo.radius_init=null", "algo.stdev_init=0.04",
        "problem.num_episodes=16", "problem.observation_normalization=true",
        "problem.decrease_rewards_by=0.0"], 300, 128),
    "ant_4096": (["env=brax::ant", *PGPE_CLIPUP, "algo.popsize=4096"], 100, 16),
    "humanoid_4096": (["env=brax::humanoid", *PGPE_CLIPUP, "algo.popsize=4096",
                       "problem.decrease_rewards_by=5.0",
                       "problem.alive_bonus_schedule=[400,700,10]"], 100, 16),
    "cheetahrun_4096": (["env=playground::CheetahRun", *PGPE_CLIPUP, "algo.popsize=4096"],
                        100, 16),
    "humanoidwalk_4096": (["env=playground::HumanoidWalk", *PGPE_CLIPUP, "algo.popsize=4096"],
                          100, 16),
    "brax_humanoid_30min": (["experiment=brax_humanoid", "max_time=1800", "eval_every=10",
                             "generations=100000"], None, 16),
}
SMOKE = ["algo.popsize=8", "problem.num_episodes=1", "problem.episode_length=20",
         "algo.num_interactions=null"]  # no adaptive popsize: 2 generations of 8


def run_case(name: str, smoke: bool) -> dict[str, Any]:
    from neurorun.cli.app import compose_config
    from neurorun.loop.runner import run

    overrides, generations, episodes = CASES[name]
    if smoke:
        overrides = [o for o in overrides if not o.startswith(("max_time=", "eval_every="))]
        generations, episodes = 2, 2
    device = "cpu" if smoke else "cuda"
    budget = [f"generations={generations}", f"eval_every={generations}"] if generations else []
    args = [*overrides, f"problem.device={device}", *budget, f"eval_episodes={episodes}",
            "checkpoint_every=0", "logger.console.quiet=true", *(SMOKE if smoke else [])]
    folder = RUNS / name
    shutil.rmtree(folder, ignore_errors=True)
    started = time.perf_counter()
    result = run(compose_config(args), run_dir=folder)
    wall = time.perf_counter() - started
    rows = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
    ends = [r["elapsed_s"] for r in rows]
    seconds = [end - start for start, end in zip([0.0, *ends[:-1]], ends, strict=True)]
    # the last generation also evaluates the center: leave it out of the steady state
    steady = seconds[1:-1] or seconds[1:] or seconds
    rates = [r["steps_per_s"] for r in rows[1:-1]] or [rows[-1]["steps_per_s"]]
    return {"case": name, "overrides": args, "generations": int(result["generation"]),
            "popsize": rows[-1]["popsize"], "wall_s": round(wall, 1),
            "compile_s": round(seconds[0] - statistics.median(steady), 1),
            "median_s_per_generation": round(statistics.median(steady), 3),
            "median_steps_per_s": round(statistics.median(rates)),
            "interactions": int(result["total_interaction_count"]),
            "score": round(float(result["center_eval"]), 1), "test_episodes": episodes,
            "best_score": round(float(result["best_center_eval"]), 1),
            "gpu_peak_gb": _jax_peak_gb()}


def _jax_peak_gb() -> float | None:
    """jax's peak memory on its first device (None on the CPU, which does not report it)."""
    import jax

    stats = jax.devices()[0].memory_stats() or {}
    peak = stats.get("peak_bytes_in_use")
    return None if peak is None else round(peak / 2**30, 2)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated case names")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny CPU runs that check the script (no figures)")
    args = parser.parse_args(argv)
    import torch

    if not args.smoke and not torch.cuda.is_available():
        raise SystemExit("bench_gpu: no CUDA device visible to torch; the GPU figures need one "
                         "(--smoke checks the script on the CPU)")
    results = []
    for name in args.cases.split(","):
        result = run_case(name, args.smoke)
        print(json.dumps(result), flush=True)
        results.append(result)
    device = "cpu (smoke)" if args.smoke else torch.cuda.get_device_name()
    out = RUNS / "smoke.json" if args.smoke else HERE / "results" / "gpu.json"
    return write_result(out, device=device, results=results,
                        evojax_reference={"case": "ant_evojax", "seconds": 505, "score": 5609})


TABLES = [  # (result file, title): what run.py's summary shows of this benchmark
    ("gpu.json",
     "brax and Playground on a GPU (`make bench-gpu`)"),
]


def table(report: dict) -> list[str]:
    ref = report["evojax_reference"]
    lines = [f"Device: {report['device']}.", "",
             "| case | popsize | generations | wall s | compile s | s/generation | steps/s | "
             "GPU GB | score (best) |", "|---|---|---|---|---|---|---|---|---|"]
    for r in report["results"]:
        lines.append(f"| {r['case']} | {r['popsize']:,} | {r['generations']} | {r['wall_s']} | "
                     f"{r['compile_s']} | {r['median_s_per_generation']} | "
                     f"{r['median_steps_per_s']:,} | {r.get('gpu_peak_gb', '–')} | "
                     f"{r['score']} ({r.get('best_score', '–')}) |")
    return lines + ["", f"EvoJAX's published {ref['case']} run: {ref['seconds']} s, score "
                        f"{ref['score']:,}."]


GPU_PENDING = ("**brax and Playground on a GPU**: `make bench-gpu` not yet run in full. The GPU "
               "sessions measured Playground CheetahRun (2026-11-26, three on an H200, one on an "
               "H100; the GPU item below the tables) and the brax humanoid headline at popsize "
               "256 / 1,024 / 4,096 (2026-11-28, an H100: `humanoid_gpu.json`, "
               "docs/humanoid.md). `make bench-gpu` measures brax ant and humanoid and "
               "Playground CheetahRun and HumanoidWalk at popsize 1,024 / 4,096 / 16,384 "
               "against the raw jitted step, GPU memory, EvoJAX's brax ant PGPE setup, and 30 "
               "minutes of `experiment=brax_humanoid`.")


if __name__ == "__main__":
    main()
