"""Where a vector step of the host loop goes (``bench_envpool.py --profile``).

One whole ``Problem.evaluate`` on ``envpool::<id>`` (as the training case runs it: the env's
own episodes, popsize 64, linear policy, 2 threads, obs normalization on, after one warm-up
call), with each part of the loop timed by a wrapper around it (a few tenths of a
microsecond each): EnvPool's ``pool.step`` (the simulator, its threads and EnvPool's own
Python), neurorun's EnvPool wrapper around it, normalization and policy, the statistics
buffer, the queue's rules, the finiteness check, and per call the pool's build and the
summary; what is left of the loop is its own bookkeeping (flags, appends, ends). Then the same
pool stepped raw (every env, random actions), as the ratio's denominator does, and EnvPool's
Python wrapper alone (``_from`` and ``_to`` on arrays of the same shapes).

``recorded_steps`` and ``replayed_per_s`` serve the training cases: EnvPool alone stepping
the very actions an evaluation sent (the simulator's speed depends on the actions), in sync
mode as neurorun steps it, and in async mode (``replayed_async_per_s``): what EnvPool's async
mode would give neurorun before any policy runs.
"""

from __future__ import annotations

import collections
import contextlib
import os
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

import numpy as np
import torch
from harness import rate
from raw_steps import raw_pool

import neurorun.envs.envpool_env as envpool_env
import neurorun.problems.rollout as rollout
import neurorun.problems.stats_buffer as stats_buffer
from neurorun.problems import make_problem

LINEAR = "Linear(obs_length, act_length)"
PARTS = {  # name: (owner, attribute) of the function timed
    "pool build + reset (per call)": (envpool_env.EnvPoolVecEnv, "reset_arrays"),
    "env.step_arrays": (envpool_env.EnvPoolVecEnv, "step_arrays"),
    "normalization + policy": (rollout, "make_act"),
    "statistics buffer": (stats_buffer.StatsBuffer, "add"),
    "schedule.observe": (rollout.Schedule, "observe"),
    "schedule.end": (rollout.Schedule, "end"),
    "finiteness check": (rollout, "all_finite"),
    "summary (per call)": (rollout, "summarize"),
    "loop": (rollout, "run_steps"),
}


@contextlib.contextmanager
def timed_parts() -> Iterator[dict[str, float]]:
    """Seconds spent in each of PARTS (and in ``pool.step``) while the block runs."""
    spent: dict[str, float] = collections.defaultdict(float)

    def timed(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[name] += time.perf_counter() - started
        return call

    def make_pool(*args: Any) -> Any:
        pool = build(*args)
        pool.step = timed("pool.step", pool.step)
        return pool

    def make_act(*args: Any) -> Any:  # the function it makes is timed
        return timed("normalization + policy", act(*args))

    build, act = envpool_env.make_pool, rollout.make_act
    with contextlib.ExitStack() as stack:
        for name, (owner, attribute) in PARTS.items():
            function = make_act if attribute == "make_act" else timed(
                name, getattr(owner, attribute))
            stack.enter_context(mock.patch.object(owner, attribute, function))
        stack.enter_context(mock.patch.object(envpool_env, "make_pool", make_pool))
        yield spent


@contextlib.contextmanager
def recorded_steps() -> Iterator[list[tuple[Any, ...]]]:
    """The EnvPool pools built while the block runs: (env_id, seeds, threads, options, steps),
    ``steps`` the (actions, ids) of each of their steps, kept as neurorun sent them."""
    pools: list[tuple[Any, ...]] = []

    def make_pool(env_id: str, seeds: Any, threads: int, config: dict[str, Any]) -> Any:
        pool = build(env_id, seeds, threads, config)
        steps: list[tuple[Any, Any]] = []
        step = pool.step

        def record(actions: Any, ids: Any = None) -> Any:
            steps.append((actions, ids))
            return step(actions, ids)

        pool.step = record
        pools.append((env_id, list(seeds), threads, dict(config), steps))
        return pool

    build = envpool_env.make_pool
    with mock.patch.object(envpool_env, "make_pool", make_pool):
        yield pools


def replayed_per_s(pools: list[tuple[Any, ...]]) -> float:
    """Env steps/s of EnvPool alone stepping the recorded actions on pools seeded alike (the
    same trajectories: the simulator's work of the evaluation, without neurorun)."""
    steps, seconds = 0, 0.0
    for env_id, seeds, threads, config, recorded in pools:
        pool = envpool_env.make_pool(env_id, seeds, threads, config)
        pool.reset()
        started = time.perf_counter()
        for actions, ids in recorded:
            pool.step(actions, ids)
        seconds += time.perf_counter() - started
        steps += sum(len(actions) for actions, _ in recorded)  # a row per env stepped
        pool.close()
    return steps / seconds


def replayed_async_per_s(pools: list[tuple[Any, ...]], batch_fraction: float = 0.5) -> float:
    """``replayed_per_s`` in EnvPool's async mode (``batch_size`` that fraction of the envs:
    each ``recv`` returns whichever envs of that many are ready first). Each env plays its own
    recorded actions in order, so its trajectory is the evaluation's whatever the timing. An
    env with none left is not stepped again, but for the zero-action steps (not counted) that
    keep a batch in flight while the last ones play: ``recv`` waits for a whole batch."""
    steps, seconds = 0, 0.0
    for env_id, seeds, threads, config, recorded in pools:
        count = len(seeds)
        batch = max(1, round(count * batch_fraction))
        queues: list[collections.deque] = [collections.deque() for _ in range(count)]
        for actions, ids in recorded:
            for row, env in zip(actions, range(count) if ids is None else ids, strict=True):
                queues[env].append(row)
        pool = envpool_env.make_pool(env_id, seeds, threads, config, batch_size=batch)
        idle = np.zeros_like(recorded[0][0][0])
        playing = np.zeros(count, dtype=bool)  # a recorded action of the env is in flight
        left = sum(map(len, queues))  # recorded actions not yet sent
        in_flight = count  # the reset sends every env
        pool.async_reset()
        started = time.perf_counter()
        while True:
            ids = pool.recv()[-1]["env_id"]
            in_flight -= len(ids)
            playing[ids] = False
            ready = [env for env in ids if queues[env]]
            if not left and not playing.any():
                break
            spare = [env for env in ids if not queues[env]]
            padding = spare[:max(0, batch - in_flight - len(ready))]
            rows = [queues[env].popleft() for env in ready] + [idle] * len(padding)
            playing[ready] = True
            left -= len(ready)
            in_flight += len(rows)
            if rows:
                pool.send(np.stack(rows), np.array(ready + padding, dtype=np.int32))
        seconds += time.perf_counter() - started
        steps += sum(len(actions) for actions, _ in recorded)
        pool.close()
    return steps / seconds


def envpool_python(pool: Any, num_envs: int) -> float:
    """Seconds per step of EnvPool's Python wrapper alone (``_from`` + ``_to``)."""
    actions = np.zeros((num_envs, *pool.action_space.shape), np.float32)
    ids = np.arange(num_envs, dtype=np.int32)
    pool.send(actions, ids)
    state = pool._recv()
    return 1.0 / rate(lambda: (pool._from(actions, ids), pool._to(state, False, True), 1)[-1],
                      0.5)


def profile(env_id: str, popsize: int = 64, threads: int = 2,
            calls: int = 5) -> dict[str, Any]:
    """Microseconds per vector step of each part of an evaluate call (the median over
    ``calls`` calls: a loaded machine preempts some), and of raw steps."""
    problem = make_problem(env=f"envpool::{env_id}", network=LINEAR,
                           observation_normalization=True, num_threads=threads, seed=0)
    generator = torch.Generator().manual_seed(0)
    sample = lambda: 0.1 * torch.randn(popsize, problem.solution_length,  # noqa: E731
                                       generator=generator)
    problem.evaluate(sample())
    per_call: dict[str, list[float]] = collections.defaultdict(list)
    for _ in range(calls):
        with timed_parts() as spent:
            started = time.perf_counter()
            problem.evaluate(sample())
            spent["Problem.evaluate"] = time.perf_counter() - started
        stats = problem.last_stats
        steps = stats.num_vector_steps
        for name, seconds in spent.items():
            per_call[name].append(seconds / steps * 1e6)
        per_call["vector steps"].append(steps)
        per_call["envs stepped per vector step"].append(stats.num_simulated_steps / steps)
        per_call["counted steps/s"].append(stats.num_interactions / spent["Problem.evaluate"])
    per_step = {name: round(statistics.median(values), 1) for name, values in per_call.items()}
    inside = ("env.step_arrays", "normalization + policy", "statistics buffer",
              "schedule.observe", "schedule.end", "finiteness check")
    per_step["loop bookkeeping (the rest of the loop)"] = round(
        per_step["loop"] - sum(per_step.get(name, 0.0) for name in inside), 1)
    per_step["env.step_arrays besides pool.step"] = round(
        per_step["env.step_arrays"] - per_step["pool.step"], 1)
    pool = problem.host.envs.made("eval").pool
    per_step["EnvPool's Python in pool.step (alone)"] = round(
        envpool_python(pool, popsize) * 1e6, 1)
    problem.close()
    raw = envpool_raw(env_id, popsize, threads)
    return {"env": env_id, "popsize": popsize, "threads": threads, "calls": calls,
            "us_per_vector_step (median over calls)": per_step,
            "raw_us_per_vector_step_all_envs": round(popsize / raw * 1e6, 1),
            "raw_steps_per_s": round(raw), "load_average": list(os.getloadavg())}


def envpool_raw(env_id: str, num_envs: int, threads: int) -> float:
    """EnvPool's env steps/s, every env stepped with random actions (as bench_envpool's raw)."""
    return raw_pool(env_id, num_envs, threads, 2.0, None)
