"""What a run hands out for a solution: the policy on raw observations (``EnvPolicy``) and the
policy pickle."""

from __future__ import annotations

import pickle
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from torch import Tensor, nn

from neurorun.problems.export import EnvPolicy
from neurorun.problems.running_norm import RunningNorm


def cpu_vector(solution: Any) -> Tensor:
    """A solution (array, list or tensor) as a flat float32 CPU tensor."""
    return torch.as_tensor(solution, dtype=torch.float32).detach().reshape(-1).cpu()


def env_policy(net: nn.Module, stats: RunningNorm | None, observation_space: spaces.Space,
               action_space: spaces.Space) -> EnvPolicy:
    """``net`` between the normalization by ``stats`` and the clipping to ``action_space``
    (the env's own, not the network's)."""
    bounded = hasattr(action_space, "low") and bool(
        np.isfinite(action_space.low).any() or np.isfinite(action_space.high).any())
    return EnvPolicy(
        net,
        obs_mean=None if stats is None else stats.mean.float().cpu(),
        obs_stdev=None if stats is None else stats.stdev.float().cpu(),
        act_low=torch.as_tensor(action_space.low, dtype=torch.float32) if bounded else None,
        act_high=torch.as_tensor(action_space.high, dtype=torch.float32) if bounded else None,
        discrete_start=int(action_space.start) if hasattr(action_space, "n") else None,
        obs_shape=tuple(observation_space.shape),
    )


def save_solution(path: str | Path, solution: Any, policy: EnvPolicy, stats: RunningNorm | None,
                  *, interaction_count: int, episode_count: int, env: str,
                  architecture: str) -> dict[str, Any]:
    """Pickle EvoTorch's dict to ``path`` and return it: ``solution``, ``policy``,
    ``obs_mean``, ``obs_stdev``, ``obs_sum``, ``obs_sum_of_squares`` (when normalizing),
    ``interaction_count``, ``episode_count``, ``time``, ``env``, ``architecture``."""
    result: dict[str, Any] = {"solution": cpu_vector(solution).clone(), "policy": policy}
    if stats is not None:  # the reference's keys: the mean and stdev it normalizes with
        result.update({k: v for k, v in stats.export().items()
                       if k not in ("obs_count", "obs_min_variance")})
    result.update(interaction_count=interaction_count, episode_count=episode_count,
                  time=datetime.now(), env=env, architecture=architecture)
    with open(path, "wb") as file:
        pickle.dump(result, file)
    return result
