"""The toy env of tests/problems as an env factory that ray actors can import by name.

``make_toy(num_envs, **options)``: a SyncVectorEnv of ToyEnv (env i seeded ``seed + i``).
Extra options: ``step_sleep`` (seconds per step: keeps a generation running long enough to
kill an actor), ``raise_seed`` (every step of an env reset with this seed raises: an env
failing inside an actor), ``die_file`` (the first step that finds this file removes it and ends
its process at once: an actor dying in the middle of a job, exactly once).
"""

from __future__ import annotations

import os
import time

import numpy as np
from gymnasium.vector import SyncVectorEnv

from tests.problems.toy_env import ToyEnv

SPEC = "tests.parallel.toy_factory:make_toy"


class SlowToyEnv(ToyEnv):
    def __init__(self, step_sleep: float = 0.0, raise_seed: int | None = None,
                 die_file: str | None = None, **options):
        super().__init__(**options)
        self.step_sleep, self.raise_seed, self.die_file = step_sleep, raise_seed, die_file

    def step(self, action):
        if self.raise_seed is not None and self.seed_value == self.raise_seed:
            raise RuntimeError("toy simulator exploded")
        if self.die_file is not None:
            try:
                os.unlink(self.die_file)  # only one process removes it
            except FileNotFoundError:
                pass
            else:
                os._exit(1)
        if self.step_sleep:
            time.sleep(self.step_sleep)
        return super().step(action)


def make_toy(num_envs: int, **options) -> SyncVectorEnv:
    return SyncVectorEnv([lambda: SlowToyEnv(**options) for _ in range(num_envs)])


def toy_fitness(params: np.ndarray, seeds: np.ndarray, length: int,
                mean=(0.0, 0.0), stdev=(1.0, 1.0)) -> np.ndarray:
    """Fitness of Linear(2, 1) policies [w_t, w_s, b] by hand: one episode of
    ``length + seed % 3`` steps, observation [t, seed] normalized with mean and stdev,
    reward 1 + clip(action)."""
    result = []
    for (w_t, w_s, b), seed in zip(params, seeds, strict=True):
        steps = np.arange(length + seed % 3)
        obs_t, obs_s = (steps - mean[0]) / stdev[0], (seed - mean[1]) / stdev[1]
        action = np.clip(w_t * obs_t + w_s * obs_s + b, -1, 1)
        result.append(float(np.sum(1 + action)))
    return np.array(result)
