"""Evaluation throughput against the raw simulator (``make bench``).

For each case, in one process: the raw vector env (the same one the evaluator builds, same
number of envs) stepped with pre-sampled random actions and no policy, and
``Problem.evaluate`` on a population of that size (observation normalization on), in
alternating rounds of equal vector-step counts. Reported per case (medians over rounds):

- ``raw_env_steps_per_s``: env steps per second of the raw vector env;
- ``steps_finished_envs``: whether the evaluator keeps stepping the envs of solutions whose
  episode ended until the batch's longest episode ends: true for gymnasium's native vector
  envs (CartPole) and brax (one compiled step for the whole batch); a
  plain SyncVectorEnv (the other gymnasium envs) steps only the envs still running;
- ``eval_interactions_per_s``: counted interactions per second (finished envs excluded),
  and ``interaction_ratio`` = that / raw env steps per second: the share of the simulator's
  speed a user gets as counted steps (where finished envs are stepped, it is low early in
  training, when many episodes end early);
- ``eval_env_steps_per_s``: env steps per second during evaluation counted as vector steps x
  envs, ``ratio`` = that / raw, and ``overhead_us_per_vector_step`` = evaluation time per
  vector step minus the raw one (neurorun's own cost: policy, obs-norm, bookkeeping). These
  three describe the simulator's work only where ``steps_finished_envs``; elsewhere a
  vector step moves fewer envs than the raw one and they are left out of the summary.
- ``ray2_interactions_per_s`` (``--ray``, on with ``--full``): counted interactions per
  second when the same population is evaluated by a RayEvaluator with 2 actors, and
  ``ray2_ratio`` = that / the raw steps/s of one process (2.0 is a perfect split on 2 cores).

Cases: every env at popsize 64 and 256 with a 16-unit tanh MLP, and CartPole with a linear
policy at 256. Targets: interaction_ratio >= 0.9 for simulator-bound envs (HalfCheetah,
LunarLanderContinuous, Humanoid) and overhead <= 100 us for microsecond envs (CartPole,
Pendulum) at popsize 256. Writes benchmarks/results/eval.json. ``--full`` adds Humanoid-v5 and
brax inverted_pendulum, ant and humanoid (CPU) and the ray cases.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch
from harness import rate, seconds, write_result

from neurorun.envs.gym_env import gym_env_spec, make_gym_vector_env
from neurorun.problems import make_problem

LINEAR = "Linear(obs_length, act_length)"
HIDDEN = "Linear(obs_length, 16) >> Tanh() >> Linear(16, act_length)"
RESULTS = Path(__file__).resolve().parent / "results" / "eval.json"
POPSIZES = (64, 256)
# env, episode_length (short episodes: more rounds in the same time)
QUICK_ENVS = [("CartPole-v1", None), ("Pendulum-v1", None), ("LunarLanderContinuous-v3", 150),
              ("HalfCheetah-v5", 100)]
FULL_ENVS = [("Humanoid-v5", 100), ("brax::inverted_pendulum", 200), ("brax::ant", 100),
             ("brax::humanoid", 100)]


def cases(full: bool) -> list[tuple[str, int, int | None, str]]:
    """(env, popsize, episode_length, network) of every case, CartPole linear first."""
    envs = QUICK_ENVS + (FULL_ENVS if full else [])
    return [("CartPole-v1", 256, None, LINEAR)] + [
        (env, popsize, length, HIDDEN) for env, length in envs for popsize in POPSIZES]


def _raw_env(env_id: str, num_envs: int, episode_length: int | None) -> tuple[Any, list]:
    """The vector env the evaluator builds, with 32 pre-sampled random action batches."""
    if env_id.startswith("brax::"):
        from neurorun.envs import make_env

        env = make_env(env_id, num_envs, seed=0, episode_length=episode_length)
        size = env.single_action_space.shape[0]
        return env, [torch.rand(num_envs, size) * 2 - 1 for _ in range(32)]
    env = make_gym_vector_env(env_id, num_envs, episode_length=episode_length)
    env.action_space.seed(0)
    env.reset(seed=0)
    return env, [env.action_space.sample() for _ in range(32)]


def _steps_finished_envs(env_id: str) -> bool:
    """brax and gymnasium's native vector envs step the whole batch (vectorization auto)."""
    return env_id.startswith("brax::") or gym_env_spec(env_id).vector_entry_point is not None


def _time_raw(env: Any, actions: list, steps: int) -> float:
    """Seconds per vector step over ``steps`` random-action steps."""
    def block() -> None:
        for k in range(steps):
            env.step(actions[k % 32])

    took, _ = seconds(block)
    return took / steps


def _problem_kwargs(env_id: str, network: str, episode_length: int | None) -> dict[str, Any]:
    return {"env": env_id, "network": network, "observation_normalization": True,
            "episode_length": episode_length, "seed": 0}


def ray_interactions_per_s(kwargs: dict[str, Any], params: torch.Tensor,
                           min_seconds: float) -> float:
    """Counted interactions per second of a RayEvaluator with 2 actors (after a warm-up
    call that builds, and for brax compiles, the actors' envs)."""
    from neurorun.parallel import RayEvaluator

    with RayEvaluator(kwargs, num_actors=2) as evaluator:
        evaluator.evaluate(params)

        def generation() -> float:
            evaluator.evaluate(params)
            return evaluator.last_stats.num_interactions

        return rate(generation, min_seconds)


def bench_case(env_id: str, popsize: int, episode_length: int | None, network: str,
               min_seconds: float, ray: bool) -> dict:
    """Alternates raw blocks and evaluations (same number of vector steps) so that load
    changes on a shared machine hit both sides; reports medians over the rounds."""
    kwargs = _problem_kwargs(env_id, network, episode_length)
    problem = make_problem(**kwargs)
    params = 0.3 * torch.randn(popsize, problem.solution_length,
                               generator=torch.Generator().manual_seed(0))
    problem.evaluate(params)  # builds the env (compiles, for brax), fills the obs stats
    env, actions = _raw_env(env_id, popsize, episode_length)
    _time_raw(env, actions, 20)
    raw, evals, interactions, steps, spent = [], [], 0, 0, 0.0
    while spent < min_seconds or len(evals) < 3:
        took, _ = seconds(lambda: problem.evaluate(params))
        vector_steps = problem.last_stats.num_vector_steps
        evals.append(took / vector_steps)
        raw.append(_time_raw(env, actions, vector_steps))
        interactions += problem.last_stats.num_interactions
        steps += vector_steps
        spent += took
    env.close()
    problem.close()
    raw_step, eval_step = float(np.median(raw)), float(np.median(evals))
    result = {
        "env": env_id, "popsize": popsize, "network": network,
        "episode_length": episode_length, "rounds": len(evals), "vector_steps": steps,
        "raw_env_steps_per_s": round(popsize / raw_step),
        "eval_env_steps_per_s": round(popsize / eval_step),
        "eval_interactions_per_s": round(interactions / spent),
        "steps_finished_envs": _steps_finished_envs(env_id),
        "ratio": round(raw_step / eval_step, 3),
        "interaction_ratio": round(interactions / spent * raw_step / popsize, 3),
        "ratio_per_round_median": round(float(np.median(np.divide(raw, evals))), 3),
        "raw_us_per_vector_step": round(raw_step * 1e6, 1),
        "eval_us_per_vector_step": round(eval_step * 1e6, 1),
        "overhead_us_per_vector_step": round((eval_step - raw_step) * 1e6, 1),
    }
    if ray:
        rate = ray_interactions_per_s(kwargs, params, min_seconds)
        result["ray2_interactions_per_s"] = round(rate)
        result["ray2_ratio"] = round(rate * raw_step / popsize, 3)
    return result


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=12.0,
                        help="minimum seconds of evaluation per case")
    parser.add_argument("--full", action="store_true",
                        help="add Humanoid-v5, brax and the ray cases")
    parser.add_argument("--ray", action="store_true",
                        help="measure 2 ray actors at popsize 256 (on with --full)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    use_ray = args.ray or args.full
    if use_ray:
        import ray

        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                 logging_level="ERROR")
    results = []
    try:
        for env_id, popsize, episode_length, network in cases(args.full):
            result = bench_case(env_id, popsize, episode_length, network, args.seconds,
                                ray=use_ray and popsize == 256 and network == HIDDEN)
            print(json.dumps(result), flush=True)
            results.append(result)
    finally:
        if use_ray:
            ray.shutdown()
    return write_result(args.out, numpy=np.__version__, cases=results)


TABLES = [  # (result file, title): what run.py's summary shows of this benchmark
    ("eval.json",
     "Evaluation against the raw simulator (one process, one thread)"),
]


def table(report: dict) -> list[str]:
    lines = ["| env | network | popsize | raw env steps/s | counted steps/s in evaluation | "
             "counted ÷ raw | per vector step ÷ raw (*) | 2 ray actors: counted steps/s "
             "(÷ raw) |", "|---|---|---|---|---|---|---|---|"]
    for r in report["cases"]:
        network = r.get("network", report.get("network", ""))
        ray = (f"{r['ray2_interactions_per_s']:,} ({r['ray2_ratio']})"
               if "ray2_interactions_per_s" in r else "–")
        per_vector_step = r["ratio"] if r.get("steps_finished_envs", True) else "–"
        lines.append(f"| {r['env']} | `{network}` | {r['popsize']} | "
                     f"{r['raw_env_steps_per_s']:,} | {r['eval_interactions_per_s']:,} | "
                     f"{r.get('interaction_ratio', '–')} | {per_vector_step} | {ray} |")
    return lines + ["", "*raw*: the same vector env stepped alone with uniform random actions "
                    "(no policy, no bookkeeping). (*) where the whole batch is stepped until its "
                    "longest episode ends (CartPole's native vector env, brax's step-by-step "
                    "path); a SyncVectorEnv steps only the envs still running, so there the "
                    "per-vector-step figure means nothing: '–'."]


if __name__ == "__main__":
    main()
