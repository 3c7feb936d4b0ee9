"""brax backend: brax.envs behind the torch interface (stepped by ``JaxVecEnv``).

brax is created with ``auto_reset=False`` and ends episodes itself; JaxVecEnv resets them on
the next step, as gymnasium does.
"""

from __future__ import annotations

import difflib
import functools
from typing import Any

from gymnasium import spaces

from neurorun.envs.base import UnknownEnvError, box
from neurorun.envs.jax_env import TracedOnce, config_key, use_compilation_cache

DEFAULT_EPISODE_LENGTH = 1000  # brax.envs.create's default


def _brax_envs() -> Any:
    """brax.envs, imported on first use: jax takes seconds to load, and only brax:: ids
    need it (the jax extra; `Backend.require` has checked that it is installed). jax's
    compilation cache is set up first: brax computes with jax as it loads."""
    use_compilation_cache()
    import brax.envs

    return brax.envs


def check_brax_name(name: str) -> None:
    """UnknownEnvError naming the closest registered brax envs."""
    envs = _brax_envs()
    known = sorted(envs._envs)  # brax keeps its registry in this module-level dict
    if name not in known:
        close = difflib.get_close_matches(name, known, n=5, cutoff=0.4)
        raise UnknownEnvError(
            f"unknown brax env {name!r}; closest: {', '.join(close) or 'none'}; "
            f"registered: {', '.join(known)}"
        )


def brax_spaces(name: str, **env_config: Any) -> tuple[spaces.Box, spaces.Box]:
    """Observation and action Box of a brax env, found without compiling anything."""
    env = _environment(name, env_config)
    return box(int(env.observation_size)), box(env.action_size, 1.0)


def _environment(name: str, env_config: dict[str, Any]) -> TracedOnce:
    """The brax env of ``env_config``'s constructor arguments (``episode_length`` and
    ``action_repeat`` are the episode wrapper's), built once per config in a process."""
    check_brax_name(name)
    kwargs = {k: v for k, v in env_config.items() if k not in ("episode_length", "action_repeat")}
    return _build(name, config_key(kwargs))


@functools.lru_cache(maxsize=8)
def _build(name: str, kwargs: tuple[tuple[str, Any], ...]) -> TracedOnce:
    return TracedOnce(_brax_envs().get_environment(name, **dict(kwargs)))


def brax_episode_length(env_config: dict[str, Any], limit: int | None = None) -> int:
    """Steps of a brax env's episode: env_config's ``episode_length`` (brax's own default,
    DEFAULT_EPISODE_LENGTH, where it has none), or neurorun's ``limit`` when that is earlier."""
    length = int(env_config.get("episode_length", DEFAULT_EPISODE_LENGTH))
    return length if limit is None else min(length, int(limit))


def single_brax_env(name: str, env_config: dict[str, Any], limit: int | None = None) -> Any:
    """One brax env (not batched) as ``brax.envs.create(..., auto_reset=False)`` builds it
    from ``env_config`` (its keywords): its episodes end after ``brax_episode_length(env_config,
    limit)`` steps and are not reset (what neurorun-render plays)."""
    length = brax_episode_length(env_config, limit)
    config = {key: value for key, value in env_config.items() if key != "episode_length"}
    return _brax_envs().create(name, episode_length=length, auto_reset=False, **config)


def batched_brax_env(name: str, episode_length: int | None = None, /,
                     **env_config: Any) -> Any:
    """A brax env, episodes ended (brax's EpisodeWrapper) but not reset, vectorized over its
    reset keys: ``reset(keys)`` with one key per env makes a batch of ``len(keys)``; what
    ``brax.envs.create(..., auto_reset=False)`` builds, around the env traced once.

    Args:
        name: a brax env name (``brax.envs.get_environment``).
        episode_length: neurorun's limit; the episode ends at the earlier of it and brax's
            ``episode_length`` (env_config, default 1000).
        env_config: brax.envs.create keywords (``backend``, ``episode_length``,
            ``action_repeat``, env constructor arguments).
    """
    from brax.envs.wrappers.training import EpisodeWrapper, VmapWrapper

    length = brax_episode_length(env_config, episode_length)
    return VmapWrapper(EpisodeWrapper(_environment(name, env_config), length,
                                      int(env_config.get("action_repeat", 1))))
