"""EnvPool backend and streaming evaluation: counted steps/s against the raw simulators.

    python benchmarks/bench_envpool.py [--full] [--envs Hopper-v5,...] [--seconds 1.5]

Per case (env, popsize, policy), in one process and one after the other:

- ``gym_raw``: gymnasium's SyncVectorEnv of ``popsize`` envs, random actions, no policy;
- ``pool_raw_t1`` / ``pool_raw_t2``: an EnvPool of ``popsize`` envs with 1 / 2 threads,
  random actions, no policy (every env stepped every time: EnvPool autoresets);
- ``pool_raw_async_t2``: the same pool in EnvPool's async mode (``batch_size`` = half the
  envs, 2 threads: each ``recv`` returns whichever half is ready first), what async mode
  would add over sync mode before any policy runs;
- ``neurorun_t1`` / ``neurorun_t2``: counted interactions per second of
  ``Problem.evaluate`` on ``envpool::<id>`` (1 / 2 threads, obs normalization on), over whole
  evaluate calls (a new pool per call included): random policies around zero (stdev 0.1),
  as early in training, so episodes end at different times;
- ``neurorun_ray2`` (``--full``): the same with a RayEvaluator of 2 actors, 1 thread each.

Ratios: ``vs_pool_t1`` = neurorun_t1 / pool_raw_t1 (target >= 0.9), ``vs_gym_t1`` =
neurorun_t1 / gym_raw (target >= 2.5 on HalfCheetah and Hopper), ``threads`` = neurorun_t2 /
neurorun_t1 (target >= 1.7), ``counted_fraction`` = counted / simulated env steps.

The training cases: HalfCheetah-v5 and Humanoid-v5 as training runs them (the env's own
episodes: 1,000 steps for HalfCheetah, early falls for Humanoid; popsize 64, linear policy,
2 threads): per round, one whole evaluate call, then the raw pool stepped as long; ``ratio`` =
counted steps/s / raw steps/s per round (targets >= 0.9 and >= 0.85), median and
min-max; ``ratio_replayed``: the same against EnvPool alone stepping the evaluate call's own
actions on pools seeded alike (the simulator is slower on random policies' small actions than
on uniform random ones; this ratio is what neurorun costs); ``ratio_async_by_batch``:
EnvPool's async mode on those actions ÷ its sync mode
(``host_loop_profile.replayed_async_per_s``) with a quarter, half and three quarters of the
envs a batch. Humanoid
once more with its 64 solutions streamed over 16 envs: whether keeping the envs busy closes
the gap to raw.
``--profile``: where a vector step of those evaluate calls goes (``host_loop_profile.py``),
printed.

Streaming on vs off (``streaming`` cases): 256 solutions on 64 env slots (the queue holds
more solutions than slots) on backends that step every env of the batch (gymnasium's native
CartPole vector env), counted / simulated steps with the queue and in lock-step sub-batches
(target >= 0.9 with streaming). Episodes are cut at ``EPISODE_LENGTH`` steps so that a case
takes seconds. Writes benchmarks/results/envpool.json.
"""

from __future__ import annotations

import argparse
import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

import envpool
import numpy as np
import torch
from harness import rate, ratios, spread, spread_text, write_result
from host_loop_profile import recorded_steps, replayed_async_per_s, replayed_per_s
from raw_steps import EPISODE_LENGTH, raw_gym, raw_pool

from neurorun.problems import make_problem

RESULTS = Path(__file__).resolve().parent / "results" / "envpool.json"
LINEAR = "Linear(obs_length, act_length)"
MLP = "Linear(obs_length, 64) >> Tanh() >> Linear(64, act_length)"
QUICK_ENVS = ["CartPole-v1", "LunarLanderContinuous-v3", "Hopper-v5", "HalfCheetah-v5"]
TRAINING = {"HalfCheetah-v5": 0.9, "Humanoid-v5": 0.85}  # env: target counted / raw
ASYNC_BATCHES = (0.25, 0.5, 0.75)  # async mode's batch_size, as a fraction of the envs
FULL_ENVS = QUICK_ENVS + ["BipedalWalker-v3", "Walker2d-v5", "Ant-v5", "Humanoid-v5"]


def raw_async_pool(env_id: str, num_envs: int, threads: int, seconds: float) -> float:
    """EnvPool's async mode: ``recv`` returns the first half of the envs that are ready."""
    batch = num_envs // 2
    env = envpool.make_gymnasium(env_id, num_envs=num_envs, batch_size=batch,
                                 num_threads=threads, seed=0, max_episode_steps=EPISODE_LENGTH)
    env.action_space.seed(0)
    env.async_reset()
    actions = np.stack([env.action_space.sample() for _ in range(batch)])

    def step() -> float:
        env.send(actions, env.recv()[-1]["env_id"])
        return batch

    per_s = rate(step, seconds)
    env.close()
    return per_s


def neurorun(spec: str, popsize: int, network: str, seconds: float, *, threads: int | None,
             ray_actors: int = 0, episode_length: int | None = EPISODE_LENGTH,
             **options: Any) -> dict[str, float]:
    kwargs = {"env": spec, "network": network, "observation_normalization": True,
              "episode_length": episode_length, "num_threads": threads, "seed": 0, **options}
    problem = make_problem(**kwargs)
    evaluator = problem
    if ray_actors:
        from neurorun.parallel import RayEvaluator

        evaluator = RayEvaluator(kwargs, num_actors=ray_actors, num_cpus=ray_actors,
                                 problem=problem)
    generator = torch.Generator().manual_seed(0)
    totals = {"counted": 0, "simulated": 0}

    def generation() -> float:
        evaluator.evaluate(0.1 * torch.randn(popsize, problem.solution_length,
                                             generator=generator))
        totals["counted"] += evaluator.last_stats.num_interactions
        totals["simulated"] += evaluator.last_stats.num_simulated_steps
        return evaluator.last_stats.num_interactions

    per_s = rate(generation, seconds)
    if evaluator is not problem:
        evaluator.close()
    problem.close()
    return {"steps_per_s": per_s, "counted_fraction": totals["counted"] / totals["simulated"],
            "seconds": totals["counted"] / per_s}  # the evaluate calls' wall time


def throughput_case(env_id: str, popsize: int, network: str, seconds: float,
                    full: bool) -> dict[str, Any]:
    spec = f"envpool::{env_id}"
    case: dict[str, Any] = {"env": env_id, "popsize": popsize,
                            "policy": "linear" if network == LINEAR else "mlp64"}
    case["gym_raw"] = raw_gym(env_id, popsize, seconds)
    case["pool_raw_async_t2"] = raw_async_pool(env_id, popsize, 2, seconds)
    for threads in (1, 2):
        case[f"pool_raw_t{threads}"] = raw_pool(env_id, popsize, threads, seconds)
        result = neurorun(spec, popsize, network, seconds, threads=threads)
        case[f"neurorun_t{threads}"] = result["steps_per_s"]
        case["counted_fraction"] = result["counted_fraction"]
    if full:
        case["neurorun_ray2"] = neurorun(spec, popsize, network, seconds, threads=None,
                                         ray_actors=2)["steps_per_s"]
    case["vs_pool_t1"] = case["neurorun_t1"] / case["pool_raw_t1"]
    case["vs_pool_t2"] = case["neurorun_t2"] / case["pool_raw_t2"]
    case["vs_gym_t1"] = case["neurorun_t1"] / case["gym_raw"]
    case["threads"] = case["neurorun_t2"] / case["neurorun_t1"]
    return case


def training_case(env_id: str, popsize: int, threads: int, rounds: int,
                  slots: int | None = None) -> dict[str, Any]:
    """A generation as training runs it: the env's own episodes, ``popsize`` solutions on
    ``slots`` envs (None: one each; fewer: streaming keeps the envs busy until the queue is
    empty), ``threads`` EnvPool threads; per round, one whole evaluate call (counted steps/s),
    then EnvPool of as many envs stepped raw for as long (uniform random actions, every env),
    then EnvPool alone on the evaluate call's own actions (``pool_replayed``: what it costs
    beside neurorun), in sync mode and in async mode with ``ASYNC_BATCHES`` of the envs a batch
    (``ratio_async_by_batch``: async ÷ sync at each)."""
    slots = slots or popsize
    counted, raw, replayed = [], [], []
    replayed_async: dict[float, list[float]] = {fraction: [] for fraction in ASYNC_BATCHES}
    for _ in range(rounds):
        with recorded_steps() as pools:
            call = neurorun(f"envpool::{env_id}", popsize, LINEAR, 0.0, threads=threads,
                            episode_length=None, max_num_envs=slots)
        counted.append(call["steps_per_s"])
        raw.append(raw_pool(env_id, slots, threads, call["seconds"], None))
        replayed.append(replayed_per_s(pools))
        for fraction, rates in replayed_async.items():
            rates.append(replayed_async_per_s(pools, fraction))
    return {"env": env_id, "popsize": popsize, "slots": slots, "threads": threads,
            "rounds": rounds,
            "target": TRAINING[env_id], "date": datetime.now().isoformat(timespec="seconds"),
            "load_average": [round(x, 2) for x in os.getloadavg()],
            "neurorun": spread(counted, 0), "pool_raw": spread(raw, 0),
            "ratio": ratios(counted, raw), "pool_replayed": spread(replayed, 0),
            "ratio_replayed": ratios(counted, replayed),
            "ratio_async_by_batch": {str(fraction): ratios(rates, replayed)
                                     for fraction, rates in replayed_async.items()}}


def streaming_case(spec: str, seconds: float) -> dict[str, Any]:
    case: dict[str, Any] = {"env": spec, "popsize": 256, "slots": 64}
    for streaming in (True, False):
        result = neurorun(spec, 256, LINEAR, seconds, threads=None, max_num_envs=64,
                          streaming=streaming)
        name = "on" if streaming else "off"
        case[f"counted_fraction_{name}"] = result["counted_fraction"]
        case[f"steps_per_s_{name}"] = result["steps_per_s"]
    return case


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="all 8 envs and 2 ray actors")
    parser.add_argument("--envs", help="comma-separated env ids (default: by --full)")
    parser.add_argument("--seconds", type=float, default=1.5, help="time per measurement")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the training case")
    parser.add_argument("--training-only", action="store_true",
                        help="only the training cases (kept: the other cases of the last file)")
    parser.add_argument("--profile", action="store_true",
                        help="print where a vector step of the training cases goes; no file")
    args = parser.parse_args()
    if (args.training_only or args.profile) and (args.envs or args.full):
        parser.error("--training-only and --profile measure the training cases: leave out "
                     "--envs and --full")
    torch.set_num_threads(1)
    if args.profile:
        from host_loop_profile import profile

        for env_id in TRAINING:
            print(json.dumps(profile(env_id), indent=1), flush=True)
        return
    envs = args.envs.split(",") if args.envs else (FULL_ENVS if args.full else QUICK_ENVS)
    cases, streams, kept = [], [], {}
    if args.training_only:  # the other cases keep their own date and load
        last = json.loads(RESULTS.read_text())
        envs, cases, streams = [], last.get("cases", []), last.get("streaming", [])
        kept = {"cases_measured": last.get("cases_measured", last["date"][:10]),
                "cases_load_average": last.get("cases_load_average",
                                               last.get("load_average"))}
    for env_id in envs:
        for popsize in (64, 256):
            for network in (LINEAR, MLP):
                cases.append(throughput_case(env_id, popsize, network, args.seconds, args.full))
                print({k: round(v, 2) if isinstance(v, float) else v
                       for k, v in cases[-1].items()}, flush=True)
                write_result(RESULTS, episode_length=EPISODE_LENGTH, cases=cases,
                             streaming=streams)
    for spec in ("gym::CartPole-v1",) if not args.training_only else ():
        streams.append(streaming_case(spec, args.seconds))
        print(streams[-1], flush=True)
    training = [training_case(env_id, 64, 2, args.rounds) for env_id in TRAINING]
    training.append(training_case("Humanoid-v5", 64, 2, args.rounds, slots=16))
    print(training, flush=True)
    write_result(RESULTS, episode_length=EPISODE_LENGTH, cases=cases, streaming=streams,
                 training=training, **kept)


TABLES = [  # (result file, title): what run.py's summary shows of this benchmark
    ("envpool.json",
     "EnvPool backend and streaming evaluation (steps/s)"),
]


def table(report: dict) -> list[str]:
    def rate(value: float | None) -> str:
        return "–" if value is None else f"{value:,.0f}"

    lines = ["| env | policy | popsize | gymnasium raw | EnvPool raw 1 thr | neurorun 1 thr "
             "(÷ EnvPool raw, × gymnasium raw) | EnvPool raw 2 thr | neurorun 2 thr "
             "(÷ raw, × 1 thr) | EnvPool raw async 2 thr | neurorun 2 ray actors |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in report["cases"]:
        lines.append(
            f"| {r['env']} | {r['policy']} | {r['popsize']} | {rate(r['gym_raw'])} | "
            f"{rate(r['pool_raw_t1'])} | {rate(r['neurorun_t1'])} ({r['vs_pool_t1']:.2f}, "
            f"{r['vs_gym_t1']:.2f}×) | {rate(r['pool_raw_t2'])} | {rate(r['neurorun_t2'])} "
            f"({r['vs_pool_t2']:.2f}, {r['threads']:.2f}×) | {rate(r.get('pool_raw_async_t2'))} "
            f"| {rate(r.get('neurorun_ray2'))} |")
    lines += ["", f"Env steps/s; episodes cut at {report['episode_length']} steps; "
              "neurorun figures are counted interactions of whole evaluate calls of random "
              "policies around zero (early training: episodes of very different lengths)."]
    training = report.get("training")
    if training:
        cases = training if isinstance(training, list) else [training]  # older files: one
        lines += ["", "| a training generation | neurorun counted steps/s | EnvPool raw steps/s "
                  "| counted ÷ raw (target) | EnvPool on the same actions | counted ÷ that "
                  "| EnvPool async on the same actions ÷ sync (a quarter / half / three quarters "
                  "of the envs a batch) |",
                  "|---|---|---|---|---|---|---|"]
        for case in cases:
            episodes = "1,000-step" if case["env"] == "HalfCheetah-v5" else "the env's own"
            replayed = (f"{spread_text(case['pool_replayed'], thousands=True)} | "
                        f"{spread_text(case['ratio_replayed'])}"
                        if "pool_replayed" in case else "– | –")
            async_mode = " / ".join(spread_text(case["ratio_async_by_batch"][str(fraction)])
                                    for fraction in ASYNC_BATCHES)
            slots = case.get("slots", case["popsize"])
            on = f" on {slots} envs" if slots != case["popsize"] else ""
            lines.append(f"| {case['env']}, {episodes} episodes, popsize {case['popsize']}{on}, "
                         f"linear, {case['threads']} threads | "
                         f"{spread_text(case['neurorun'], thousands=True)} | "
                         f"{spread_text(case['pool_raw'], thousands=True)} | "
                         f"{spread_text(case['ratio'])} "
                         f"(≥ {case.get('target', 0.85)}) | {replayed} | {async_mode} |")
        lines += ["", "Measured " + "; ".join(
            f"{case['env']} {case['date'][:10]}, load average {case['load_average'][0]}"
            for case in cases) + f". Median (min–max) over {cases[0]['rounds']} rounds; each "
            "round one whole evaluate call (a new pool, obs normalization, random linear "
            "policies), then an EnvPool of as many envs stepped raw with random actions for "
            "as long, then EnvPool alone stepping the call's own actions on pools seeded "
            "alike (the same trajectories: the simulator's share of the call), in sync mode "
            "and in async mode (a quarter, half or three quarters of the envs a batch; "
            "each env plays its own actions in "
            "order; an env with none left is stepped with zero actions only to keep a batch "
            "in flight)."]
    if report.get("streaming"):
        lines += ["", "| backend that steps every env | solutions → env slots | counted ÷ "
                  "simulated, streaming | lock-step | counted steps/s streaming / lock-step |",
                  "|---|---|---|---|---|"]
        for r in report["streaming"]:
            lines.append(f"| {r['env']} | {r['popsize']} → {r['slots']} | "
                         f"{r['counted_fraction_on']:.2f} | {r['counted_fraction_off']:.2f} | "
                         f"{r['steps_per_s_on']:,.0f} / {r['steps_per_s_off']:,.0f} |")
    return lines


if __name__ == "__main__":
    main()
