"""brax backend: brax.envs behind the torch interface (stepped by ``JaxVecEnv``).

brax is created with ``auto_reset=False`` and ends episodes itself; JaxVecEnv resets them on
the next step, as gymnasium does.
"""

from __future__ import annotations

import difflib
from typing import Any

import numpy as np
from gymnasium import spaces

from neurorun.envs.base import UnknownEnvError, box

DEFAULT_EPISODE_LENGTH = 1000  # brax.envs.create's default


def _brax_envs() -> Any:
    """brax.envs, imported on first use: jax takes seconds to load, and only brax:: ids
    need it (the jax extra; `Backend.require` has checked that it is installed)."""
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
    import jax

    check_brax_name(name)
    kwargs = {k: v for k, v in env_config.items() if k not in ("episode_length", "action_repeat")}
    env = _brax_envs().get_environment(name, **kwargs)
    obs = jax.eval_shape(env.reset, jax.random.PRNGKey(0)).obs
    return box(int(np.prod(obs.shape))), box(env.action_size, 1.0)


def batched_brax_env(name: str, episode_length: int | None = None, **env_config: Any) -> Any:
    """A brax env, episodes ended (brax's EpisodeWrapper) but not reset, vectorized over its
    reset keys: ``reset(keys)`` with one key per env makes a batch of ``len(keys)``.

    Args:
        name: a brax env name (``brax.envs.get_environment``).
        episode_length: neurorun's limit; the episode ends at the earlier of it and brax's
            ``episode_length`` (env_config, default 1000).
        env_config: brax.envs.create keywords (``backend``, ``episode_length``,
            ``action_repeat``, env constructor arguments).
    """
    from brax.envs.wrappers.training import VmapWrapper

    check_brax_name(name)
    config = dict(env_config)
    length = int(config.pop("episode_length", DEFAULT_EPISODE_LENGTH))
    if episode_length is not None:
        length = min(length, int(episode_length))
    return VmapWrapper(_brax_envs().create(name, episode_length=length, auto_reset=False,
                                           **config))
