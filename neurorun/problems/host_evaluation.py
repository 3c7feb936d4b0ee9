"""The host evaluation: the cached vector envs and the Python step loop over them, with one
retry on a fresh env when a step fails."""

from __future__ import annotations

import warnings

import torch
from torch import Tensor

from neurorun.envs import backend_of, make_env
from neurorun.envs.base import EnvStepError, TorchVecEnv
from neurorun.nets import BatchedPolicy
from neurorun.problems.options import EnvOptions, RolloutOptions
from neurorun.problems.rollout import RolloutResult, rollout
from neurorun.problems.running_norm import RunningNorm


class EvaluationError(RuntimeError):
    """An env step failed again on a fresh env."""


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
        if (purpose == "test" and backend_of(self.options.spec).jax_batch is not None
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


class HostEvaluation:
    """Solutions run by ``rollout`` on the cached envs, stepped from Python."""

    def __init__(self, options: EnvOptions, policy: BatchedPolicy, device: torch.device):
        self.envs = EnvCache(options, device)
        self.policy = policy

    def __call__(self, purpose: str, params: Tensor, first: int, options: RolloutOptions, *,
                 seed: int, slots: int, normalizer: RunningNorm | None,
                 collect: RunningNorm | None, noise: torch.Generator,
                 cut: int | None = None) -> RolloutResult:
        """Solutions ``first..`` (``params (n, D)``) on ``slots`` env slots, their episodes
        ended after ``cut`` steps (None: where the env ends them); a failing env step is
        retried once on a fresh env, and ``collect`` starts again with it."""
        spec, streaming = self.envs.options.spec, self.envs.options.streaming
        n = params.shape[0]
        for attempt in range(2):
            env = self.envs.get(purpose, slots)
            if cut is not None and not env.ends_episodes:
                raise ValueError(
                    f"problem.episode_length_schedule: the envs of {spec!r} "
                    f"({type(env).__name__}, vectorization={self.envs.options.vectorization}) "
                    "cannot end single episodes. Fix: problem.vectorization=sync, or "
                    "problem.episode_length=<steps> for a fixed length")
            try:
                return rollout(env, self.policy, params, options, seed=seed,
                               streaming=streaming, slots=slots, normalizer=normalizer,
                               collect=collect, noise=noise, cut=cut)
            except EnvStepError as error:
                who = (f"solution {first + error.solution}" if error.solution is not None
                       else f"one of solutions {first}..{first + n - 1}")
                if attempt == 1:
                    raise EvaluationError(
                        f"env {spec!r} failed twice while evaluating {who} "
                        f"(the second time on a fresh env): {error.__cause__!r}") from error
                warnings.warn(f"env {spec!r} failed while evaluating {who}: "
                              f"{error.__cause__!r}; retrying on a fresh env", stacklevel=4)
                self.envs.drop(purpose)
                if collect is not None:
                    collect.load_state_dict(RunningNorm(collect.size).state_dict())
        raise AssertionError("unreachable")
