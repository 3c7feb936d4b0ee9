"""The torch-facing vector environment interface shared by every backend.

Every backend follows gymnasium's *next-step* autoreset: when ``step`` reports ``done`` for an
env, the following ``step`` call resets that env instead of stepping it; that call ignores the
env's action and returns its first observation, reward 0 and ``done`` False. Whoever counts
interactions must therefore skip an env on the step right after its ``done``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from torch import Tensor

from neurorun.common.values import is_int


class UnknownEnvError(ValueError):
    """An environment spec names no registered environment."""


class EnvStepError(RuntimeError):
    """A simulator raised an exception inside ``step``.

    Attributes:
        env_index: the index of the failing env in the vector env, or None where the backend
            cannot tell which one failed.
        solution: the index (within the rollout) of the solution that env ran, or None.
    """

    def __init__(self, message: str, env_index: int | None = None):
        super().__init__(message)
        self.env_index = env_index
        self.solution: int | None = None  # the solution that env ran (set by the rollout)


def own_episode_limit(env_config: dict[str, Any], registered: int | None) -> int | None:
    """The env's own episode limit: ``env_config``'s ``max_episode_steps`` where it is given
    (gymnasium and EnvPool both take it), else ``registered``; ValueError where it is not a
    count (gymnasium reads -1 as "no limit", so an env that never ends its episodes would
    never end a generation)."""
    steps = env_config.get("max_episode_steps")
    if steps is None:
        return registered
    if not is_int(steps) or steps < 1:
        raise ValueError(f"env_config.max_episode_steps={steps!r}: expected a count >= 1. Fix: "
                         "env.env_config.max_episode_steps=<a count>, or leave it out (the "
                         "env's own limit; problem.episode_length cuts episodes shorter)")
    return steps


def box(size: int, bound: float = np.inf) -> spaces.Box:
    """A float32 Box of ``size`` numbers in [-bound, bound] (jax envs' spaces)."""
    return spaces.Box(-bound, bound, shape=(int(size),), dtype=np.float32)


def check_observation_space(space: spaces.Space, spec: str) -> spaces.Box:
    """The observation space as a Box, or a TypeError that says what is supported."""
    if not isinstance(space, spaces.Box):
        raise TypeError(
            f"env {spec!r} has observation space {space}; neurorun policies need a Box "
            "observation space. Wrap the env (e.g. gymnasium.wrappers.FlattenObservation) "
            "and register the wrapped version, or pass a `pkg.module:factory` that does so"
        )
    return space


def policy_action_space(space: spaces.Space, spec: str) -> spaces.Box:
    """The Box the policy writes into: the space itself, or one score per choice for Discrete."""
    if isinstance(space, spaces.Discrete):
        return spaces.Box(-np.inf, np.inf, shape=(int(space.n),), dtype=np.float32)
    if isinstance(space, spaces.Box):
        return space
    raise TypeError(
        f"env {spec!r} has action space {space}; neurorun supports Box (continuous, clipped to "
        "the bounds) and Discrete (argmax of the policy outputs) action spaces"
    )


class ActionAdapter:
    """Turns a batch of policy outputs into env actions: argmax for Discrete, clip for Box.

    Works on numpy arrays when ``device`` is None (the gymnasium backend, which needs numpy
    anyway; numpy is cheaper than torch on small arrays), else on torch tensors.
    """

    def __init__(self, space: spaces.Space, device: torch.device | str | None = None):
        self.discrete = isinstance(space, spaces.Discrete)
        self.start = int(space.start) if self.discrete else 0
        self.shape = tuple(space.shape) if isinstance(space, spaces.Box) else ()
        self.bounds: tuple[Any, Any] | None = None
        if isinstance(space, spaces.Box) and (
            np.isfinite(space.low).any() or np.isfinite(space.high).any()
        ):
            low, high = (b.reshape(-1).astype(np.float32) for b in (space.low, space.high))
            if device is not None:
                low, high = (torch.as_tensor(b, device=device) for b in (low, high))
            self.bounds = (low, high)
        self.clip = torch.clamp if device is not None else _np_clip

    def __call__(self, actions: Any) -> Any:
        """(N, act_length) policy outputs -> (N,) int64 choices or (N, *shape) clipped floats."""
        if self.discrete:
            choice = actions.argmax(-1)
            return choice + self.start if self.start else choice
        if self.bounds is not None:
            actions = self.clip(actions, *self.bounds)
        if len(self.shape) > 1:
            actions = actions.reshape(actions.shape[0], *self.shape)
        return actions


def _np_clip(x: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    return np.minimum(np.maximum(x, low), high)  # faster than np.clip on small arrays


class TorchVecEnv:
    """A batch of ``num_envs`` environments speaking torch tensors on one device.

    Subclasses implement ``reset``, ``step`` and ``close`` and set ``num_envs``,
    ``single_observation_space`` (a Box), ``single_action_space`` (the Box the policy writes
    into: for a Discrete env one score per choice), ``env_action_space`` (the env's own action
    space) and ``device``. Observations come flattened to ``(num_envs, obs_length)``.
    """

    num_envs: int
    single_observation_space: spaces.Box
    single_action_space: spaces.Box
    env_action_space: spaces.Space
    device: torch.device
    spec: str

    def reset(self, seed: int | Sequence[int] | None = None) -> Tensor:
        """Reset every env; returns observations (num_envs, obs_length) float32.

        ``seed``: env i is seeded ``seed + i``, or ``seed[i]`` when a sequence is given
        (backends with one generator for all envs seed it with ``seed[0]``)."""
        raise NotImplementedError

    def step(
        self, actions: Tensor, active: np.ndarray | None = None,
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Apply policy outputs (num_envs, act_length); returns obs, reward, done (num_envs,).

        ``active`` ((num_envs,) bool, None: all) names the envs still needed; a backend with
        ``skips_inactive`` simulates only those, the others may ignore it.
        """
        raise NotImplementedError

    # Backends whose simulators run on numpy arrays set ``host_arrays = True`` and implement
    # these two: the same as ``reset``/``step`` on numpy arrays, which spares a caller that
    # works in numpy the conversions (microseconds per step, on a few-microsecond simulator).
    host_arrays: bool = False
    # Backends that set ``skips_inactive = True`` simulate only the ``active`` envs of ``step``
    # and ``step_arrays``; the others report their last observation, reward 0 and done False.
    skips_inactive: bool = False

    # Backends that set ``seeds_episodes = True`` can seed each episode: ``seed_next_episodes``
    # gives the seed of the episode an env starts at its next autoreset. Elsewhere an env's
    # later episodes continue its own generator.
    seeds_episodes: bool = False

    def seed_next_episodes(self, envs: np.ndarray, seeds: np.ndarray) -> None:
        """Seed the next episode of each of ``envs`` (indices) with ``seeds`` (backends with
        ``seeds_episodes``; a no-op elsewhere)."""

    # Backends that set ``ends_episodes = True`` can cut an episode short: ``end_episodes``
    # makes each of ``envs`` (indices) start its next episode at its next step, as after a
    # step that reported ``done`` (an episode-length curriculum cuts training episodes so).
    ends_episodes: bool = False

    def end_episodes(self, envs: np.ndarray) -> None:
        """The next step of each of ``envs`` resets it (backends with ``ends_episodes``)."""
        raise NotImplementedError(f"{type(self).__name__} cannot end single episodes")

    def reset_arrays(self, seed: int | None = None) -> np.ndarray:
        """``reset`` on numpy arrays (backends with ``host_arrays``)."""
        raise NotImplementedError(f"{type(self).__name__} has no numpy interface")

    def step_arrays(
        self, actions: np.ndarray, active: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``step`` on numpy arrays (backends with ``host_arrays``)."""
        raise NotImplementedError(f"{type(self).__name__} has no numpy interface")

    def close(self) -> None:
        """Release the simulators."""

    def __enter__(self) -> TorchVecEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
