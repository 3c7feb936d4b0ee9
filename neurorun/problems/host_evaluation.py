"""The host evaluation: the Python step loop over the cached vector envs (``EnvCache``), with
one retry on a fresh env when a step fails."""

from __future__ import annotations

import warnings

import torch
from torch import Tensor

from neurorun.envs.base import EnvStepError
from neurorun.nets import BatchedPolicy
from neurorun.problems.env_cache import EnvCache
from neurorun.problems.options import EnvOptions, RolloutOptions
from neurorun.problems.returns import RolloutResult
from neurorun.problems.rollout import rollout
from neurorun.problems.running_norm import RunningNorm


class EvaluationError(RuntimeError):
    """An env step failed again on a fresh env."""


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
