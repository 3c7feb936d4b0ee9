"""What a run's videos cost (`logger.video_every`): seconds per video against seconds per
generation, on HalfCheetah-v5 (EnvPool, as `env=HalfCheetah-v5` runs it; filmed on gymnasium's
env), brax ant (its episodes never ended early: 1000 steps, as a walking ant's) and Playground
CheetahRun.

    python benchmarks/bench_videos.py [--cases HalfCheetah-v5 brax::ant] [--generations 4]

Each case is a run of its env preset (popsize, episode length, observation statistics as the
preset sets them; no time limit) for GENERATIONS generations. A generation's seconds are the
median of its `elapsed_s` steps, the first generation left out (compiles). After the last
generation its center is filmed VIDEOS times as the run films it (`RunVideos.record`, on the
run's problem and statistics): the first video makes the player (gymnasium's env, or the jax
env's jitted reset and step), the later ones reuse it. A run pays its first video once and a
later one every `video_every` generations, so the smallest `video_every` that keeps videos under
10 % of the run's time is ceil(later video / (0.1 x generation)). The first video of a jax env
compiles its one-env reset and step, which jax's compilation cache keeps: a second invocation
shows what later runs pay. Writes benchmarks/results/videos.json. Not part of run.py's sets: run
it on its own.
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
from pathlib import Path

from harness import RESULTS, write_result

from neurorun.problems.playback import prepare_mujoco_gl

# each case's env and the overrides of its preset: brax ant's episodes never end early, as a
# walking ant's do not (an untrained one falls within tens of steps: its videos and generations
# would both be short)
CASES = {"HalfCheetah-v5": [], "brax::ant": ["+env.env_config.terminate_when_unhealthy=false"],
         "playground::CheetahRun": []}
SHARE = 0.10  # the most of a run's time its videos may take


def measure(env: str, generations: int, videos: int) -> dict:
    """One case: its seconds per generation and per video, and the video_every they give."""
    from neurorun.cli.app import compose_config
    from neurorun.loggers.base import Logger
    from neurorun.loggers.videos import RunVideos
    from neurorun.loop.callbacks import Callbacks
    from neurorun.loop.runner import run

    elapsed: list[float] = []
    filmed: list[dict] = []

    class Film(Callbacks):
        def on_generation_end(self, runner, generation, status):
            elapsed.append(status["elapsed_s"])
            if generation < generations:
                return
            recorder = RunVideos(folder / "films", 1)
            for _ in range(videos):
                started = time.perf_counter()
                path = recorder.record(generation, runner.problem, runner.algorithm.center,
                                       runner.test_seed, Logger())
                filmed.append({"seconds": round(time.perf_counter() - started, 2),
                               "bytes": path.stat().st_size})
            recorder.close()

    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        cfg = compose_config([f"env={env}", *CASES.get(env, []), f"generations={generations}",
                              "max_time=null", "logger.console.quiet=true", "checkpoint_every=0"])
        run(cfg, run_dir=folder / "run", callbacks=Film())
    generation = statistics.median(b - a for a, b in zip(elapsed, elapsed[1:], strict=False))
    later = statistics.median(v["seconds"] for v in filmed[1:])
    return {"popsize": int(cfg.algo.popsize), "generation_s": round(generation, 2),
            "first_video_s": filmed[0]["seconds"], "later_video_s": later,
            "videos": filmed,
            "video_every_for_10_percent": math.ceil(later / (SHARE * generation))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=list(CASES))
    parser.add_argument("--generations", type=int, default=4)
    parser.add_argument("--videos", type=int, default=3)
    args = parser.parse_args()
    gl = prepare_mujoco_gl()  # before mujoco is imported, as a run does
    results = {}
    for env in args.cases:
        results[env] = measure(env, args.generations, args.videos)
        print(env, results[env], flush=True)
    report = write_result(RESULTS / "videos.json", mujoco_gl=gl, cases=results)
    print("load average at the end:", report["load_average"])


if __name__ == "__main__":
    main()
