"""A tiny deterministic env whose returns, episode lengths and observations are known by hand.

Reset with seed s: the episode has ``length + s % 3`` steps; each later (autoreset) episode of
the same env is one step longer than the previous one. Observation before step t (t from 0):
``[t, s]``. Action a (one value, clipped to [-1, 1] by neurorun) gives reward ``1 + a``.
Options make one seed misbehave: ``nan_reward_seed`` (NaN reward at step 2),
``inf_reward_seed`` (+inf reward at step 2),
``nan_obs_seed`` (NaN observation after step 2), ``fail_seed`` (raises at step 2 while
``FAILURES[0] > 0``, decrementing it).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

TOY_ID = "NeurorunToy-v0"
FAILURES = [0]


class ToyEnv(gym.Env):
    def __init__(self, length: int = 4, nan_reward_seed: int | None = None,
                 nan_obs_seed: int | None = None, fail_seed: int | None = None,
                 discrete: bool = False, discrete_obs: bool = False,
                 inf_reward_seed: int | None = None):
        self.length = length
        self.inf_reward_seed = inf_reward_seed
        self.nan_reward_seed, self.nan_obs_seed, self.fail_seed = (
            nan_reward_seed, nan_obs_seed, fail_seed)
        self.observation_space = (spaces.Discrete(5) if discrete_obs else
                                  spaces.Box(-np.inf, np.inf, shape=(2,), dtype=np.float32))
        self.action_space = (spaces.Discrete(3) if discrete else
                             spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32))
        self.seed_value = 0
        self.episode_length = length
        self.t = 0

    def _obs(self) -> np.ndarray:
        return np.array([self.t, self.seed_value], dtype=np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if seed is not None:
            self.seed_value = seed
            self.episode_length = self.length + seed % 3
        else:
            self.episode_length += 1
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        if self.t == 2 and self.seed_value == self.fail_seed and FAILURES[0] > 0:
            FAILURES[0] -= 1
            raise RuntimeError("simulator exploded")
        value = float(action) if isinstance(self.action_space, spaces.Discrete) else float(
            np.asarray(action).reshape(-1)[0])
        reward = 1.0 + value
        if self.t == 2 and self.seed_value == self.nan_reward_seed:
            reward = float("nan")
        if self.t == 2 and self.seed_value == self.inf_reward_seed:
            reward = float("inf")
        obs = self._obs()
        if self.t == 2 and self.seed_value == self.nan_obs_seed:
            obs[:] = np.nan
        return obs, reward, self.t >= self.episode_length, False, {}


def register_toy_env() -> None:
    if TOY_ID not in gym.registry:
        gym.register(TOY_ID, entry_point=ToyEnv)


def toy_lengths(seed: int, length: int, num_episodes: int) -> list[int]:
    """Episode lengths of the env seeded ``seed``: written out from the rule above."""
    first = length + seed % 3
    return [first + k for k in range(num_episodes)]


def episode_seed(base: int, solution: int, episode: int) -> int:
    """neurorun's documented seed of a solution's episode on backends that seed each episode:
    ``base + j + e * 2**20``."""
    return base + solution + episode * (1 << 20)


def episode_lengths(base: int, solution: int, length: int, num_episodes: int) -> list[int]:
    """Episode lengths of a solution whose every episode is seeded (``episode_seed``)."""
    return [length + episode_seed(base, solution, e) % 3 for e in range(num_episodes)]
