"""The vector envs an evaluation steps: one per purpose, made on first use and kept."""

from __future__ import annotations

import torch

from neurorun.envs import backend_of, make_env
from neurorun.envs.base import TorchVecEnv
from neurorun.problems.options import EnvOptions


class EnvCache:
    """One vector env per purpose ("eval": the population, "test": the center's episodes),
    made on first use and kept while its size serves."""

    def __init__(self, options: EnvOptions, device: torch.device):
        self.options = options
        self.device = device
        self._envs: dict[str, TorchVecEnv] = {}

    def made(self, purpose: str) -> TorchVecEnv | None:
        """The env made for ``purpose``, None before its first use."""
        return self._envs.get(purpose)

    def get(self, purpose: str, num_envs: int) -> TorchVecEnv:
        """The env for ``purpose`` with ``num_envs`` envs (or more, on backends that seed
        each episode). jax envs reuse the evaluation env for test episodes when it is large
        enough (a new batch size means a new compilation)."""
        shared = self._envs.get("eval")
        if (purpose == "test" and backend_of(self.options.spec).is_jax
                and shared is not None and shared.num_envs >= num_envs):
            return shared
        env = self._envs.get(purpose)
        # a larger env serves only where each episode is seeded: elsewhere (one generator for
        # all slots) results would depend on the envs made before (a popsize that shrank)
        if env is not None and (env.num_envs == num_envs
                                or env.seeds_episodes and env.num_envs > num_envs):
            return env
        self.drop(purpose)
        # test episodes on gymnasium: a SyncVectorEnv seeds episode k with seed + k (a native
        # vector env seeds the batch once), as neurorun-eval reports them
        vectorization = "sync" if purpose == "test" else self.options.vectorization
        env = make_env(self.options.spec, num_envs, device=self.device,
                       vectorization=vectorization, episode_length=self.options.episode_length,
                       num_threads=self.options.num_threads, **self.options.config)
        self._envs[purpose] = env
        return env

    def drop(self, purpose: str) -> None:
        env = self._envs.pop(purpose, None)
        if env is not None:
            env.close()

    def close(self) -> None:
        for purpose in list(self._envs):
            self.drop(purpose)
