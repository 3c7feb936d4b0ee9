"""The simulators stepped raw, random actions, no policy: what neurorun's counted steps/s are
compared with (bench_envpool.py, host_loop_profile.py)."""

from __future__ import annotations

import itertools
from typing import Any

import envpool
import gymnasium as gym
import numpy as np
from harness import rate

EPISODE_LENGTH = 200  # the raw runs' time limit, as the benchmarks' neurorun runs


def stepped_per_s(env: Any, actions: list, num_envs: int, seconds: float) -> float:
    """Env steps per second of ``env.step`` cycling through ``actions`` for ``seconds``."""
    cycle = itertools.cycle(actions)

    def step() -> float:
        env.step(next(cycle))
        return num_envs

    per_s = rate(step, seconds)
    env.close()
    return per_s


def raw_gym(env_id: str, num_envs: int, seconds: float) -> float:
    env = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="sync",
                       max_episode_steps=EPISODE_LENGTH)
    env.action_space.seed(0)
    env.reset(seed=0)
    return stepped_per_s(env, [env.action_space.sample() for _ in range(16)], num_envs,
                          seconds)


def raw_pool(env_id: str, num_envs: int, threads: int, seconds: float,
             episode_length: int | None = EPISODE_LENGTH) -> float:
    limit = {} if episode_length is None else {"max_episode_steps": episode_length}
    env = envpool.make_gymnasium(env_id, num_envs=num_envs, batch_size=num_envs,
                                 num_threads=threads, seed=0, **limit)
    env.action_space.seed(0)
    env.reset()
    actions = [np.stack([env.action_space.sample() for _ in range(num_envs)])
               for _ in range(16)]
    return stepped_per_s(env, actions, num_envs, seconds)
