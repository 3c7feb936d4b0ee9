"""jax envs (brax, MuJoCo Playground): counted steps/s against the raw jitted step.

    python benchmarks/bench_jax.py [--popsizes 64,256] [--device cpu] [--seconds 10]

Per case (env, popsize), in one process and one after the other:

- ``raw``: the batched env neurorun steps (the same env object: episodes ended by brax's
  EpisodeWrapper, no autoreset, no policy), ``jax.jit(env.step)`` on fixed random actions in
  [-1, 1], ``popsize`` envs, every env stepped every time: the simulator's own speed (its
  compile time covers both cache keys: the state from reset, then one from step);
- ``neurorun``: counted interactions per second of ``Problem.evaluate`` (a linear policy, obs
  normalization on, one episode per solution, random policies around zero as early in
  training) over whole evaluate calls, after a first call that compiles;
- ``envpool`` (where EnvPool has the same task: Ant-v5 for brax ant, CheetahRun-v1 for
  Playground CheetahRun): EnvPool stepped raw with 2 threads, and neurorun on it (Ant-v5
  only: EnvPool's DM Control tasks return Dict observations, which neurorun refuses).

``vs_raw`` = neurorun / raw; ``vs_envpool_raw`` = neurorun on the jax env / EnvPool raw;
``vs_envpool`` = neurorun on the jax env / neurorun on EnvPool.
Episodes are cut at ``EPISODE_LENGTH`` steps. Compile seconds are reported for both (jax's
persistent compilation cache starts empty here, so every figure is a cold compile). Writes
benchmarks/results/jax_envs.json (``--device cuda``: jax_envs_gpu.json).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import jax
import torch
from _report import write_report
from bench_envpool import LINEAR, neurorun, raw_pool

from neurorun.envs import parse_spec
from neurorun.envs.jax_env import batched_jax_env
from neurorun.problems import make_problem

RESULTS = Path(__file__).resolve().parent / "results"
EPISODE_LENGTH = 200
# the EnvPool twin of each env, and whether neurorun can run it (EnvPool's DM Control tasks
# have Dict observations, which neurorun policies do not take: raw stepping only)
ENVS = {"playground::CheetahRun": ("CheetahRun-v1", False), "brax::ant": ("Ant-v5", True)}


def raw_jitted(spec: str, num_envs: int, seconds: float) -> dict[str, float]:
    """Steps/s of the jitted batch step alone, and its compile seconds."""
    env = batched_jax_env(*parse_spec(spec), num_envs, EPISODE_LENGTH)
    step = jax.jit(env.step)
    started = time.perf_counter()
    state = jax.jit(env.reset)(jax.random.PRNGKey(0))
    actions = jax.random.uniform(jax.random.PRNGKey(1), (num_envs, env.action_size),
                                 minval=-1.0, maxval=1.0)
    for _ in range(2):  # states from reset and from step have different jit cache keys
        state = step(state, actions)
    jax.block_until_ready(state.obs)
    compile_s = time.perf_counter() - started
    steps, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        state = step(state, actions)
        steps += 1
        if steps % 16 == 0:
            jax.block_until_ready(state.obs)
    jax.block_until_ready(state.obs)
    return {"steps_per_s": steps * num_envs / (time.perf_counter() - started),
            "compile_s": compile_s}


def counted(spec: str, popsize: int, seconds: float, device: str) -> dict[str, float]:
    """neurorun's counted interactions/s on ``spec`` (after a first, compiling evaluate)."""
    problem = make_problem(env=spec, network=LINEAR, observation_normalization=True,
                           episode_length=EPISODE_LENGTH, seed=0, device=device)
    generator = torch.Generator().manual_seed(0)

    def population() -> torch.Tensor:
        return 0.1 * torch.randn(popsize, problem.solution_length, generator=generator)

    started = time.perf_counter()
    problem.evaluate(population())
    compile_s = time.perf_counter() - started
    count = simulated = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds or count == 0:
        problem.evaluate(population())
        count += problem.last_stats["num_interactions"]
        simulated += problem.last_stats["num_simulated_steps"]
    elapsed = time.perf_counter() - started
    problem.close()
    return {"steps_per_s": count / elapsed, "counted_fraction": count / simulated,
            "compile_s": compile_s}


def case(spec: str, popsize: int, seconds: float, device: str) -> dict[str, Any]:
    raw = raw_jitted(spec, popsize, seconds)
    ours = counted(spec, popsize, seconds, device)
    result: dict[str, Any] = {
        "env": spec, "popsize": popsize, "raw": raw["steps_per_s"],
        "raw_compile_s": raw["compile_s"], "neurorun": ours["steps_per_s"],
        "neurorun_compile_s": ours["compile_s"], "counted_fraction": ours["counted_fraction"],
        "vs_raw": ours["steps_per_s"] / raw["steps_per_s"]}
    twin, runs_in_neurorun = ENVS.get(spec, (None, False))
    if twin is not None and device == "cpu":
        result["envpool_id"] = twin
        result["envpool_raw_t2"] = raw_pool(twin, popsize, 2, seconds)
        result["vs_envpool_raw"] = ours["steps_per_s"] / result["envpool_raw_t2"]
        if runs_in_neurorun:
            result["envpool_neurorun_t2"] = neurorun(f"envpool::{twin}", popsize, LINEAR,
                                                     seconds, threads=2)["steps_per_s"]
            result["vs_envpool"] = ours["steps_per_s"] / result["envpool_neurorun_t2"]
    return result


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", default=",".join(ENVS))
    parser.add_argument("--popsizes", default="64,256")
    parser.add_argument("--device", default="cpu", help="torch device of the policies")
    parser.add_argument("--seconds", type=float, default=10.0,
                        help="timed seconds per measurement, after compiling")
    args = parser.parse_args(argv)
    # an empty persistent cache: every figure is a cold compile
    jax.config.update("jax_compilation_cache_dir", tempfile.mkdtemp(prefix="bench_jax_"))
    results = []
    for spec in args.envs.split(","):
        for popsize in (int(p) for p in args.popsizes.split(",")):
            result = {k: round(v, 3) if isinstance(v, float) else v
                      for k, v in case(spec, popsize, args.seconds, args.device).items()}
            print(json.dumps(result), flush=True)
            results.append(result)
    name = "jax_envs.json" if args.device == "cpu" else "jax_envs_gpu.json"
    return write_report(RESULTS / name, device=args.device, jax=jax.__version__,
                        jax_backend=jax.default_backend(), episode_length=EPISODE_LENGTH,
                        results=results)


if __name__ == "__main__":
    main()
