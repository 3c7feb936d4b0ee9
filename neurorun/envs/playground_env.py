"""MuJoCo Playground backend (``playground::CheetahRun``), stepped by ``JaxVecEnv``.

An env is ``mujoco_playground.registry.load(name, config_overrides=env_config)``, ended at its
config's ``episode_length`` (its action repeated ``action_repeat`` times per policy step) by
brax's EpisodeWrapper and batched by brax's VmapWrapper, as ``brax.envs.create`` does, with no
autoreset wrapper. ``env_config`` overrides keys of the env's default config
(``registry.get_default_config(name)``); unknown keys are refused. Where the config has an
``impl`` (the physics implementation) and env_config does not set it, neurorun picks ``jax``
when jax runs on the CPU (Playground's default, ``warp``, is several times slower there:
docs/backends.md) or Warp is not installed, and leaves Playground's default on accelerators.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import importlib.util
import io
from typing import Any

from gymnasium import spaces

from neurorun.envs.base import UnknownEnvError, box
from neurorun.envs.jax_env import TracedOnce, config_key, use_compilation_cache

IMPLEMENTATIONS = ("jax", "warp")  # the physics implementations a Playground config may name


def _registry() -> Any:
    """mujoco_playground.registry, imported on first use (seconds), with Warp's start-up
    banner kept off the console (the playground extra; `Backend.require` has checked that it
    is installed). Warp is quieted where it is installed: MJX's own physics runs without it.
    jax's compilation cache is set up first: Playground computes with jax as it loads."""
    use_compilation_cache()
    with contextlib.redirect_stdout(io.StringIO()):
        with contextlib.suppress(ImportError):
            import warp

            warp.config.quiet = True
        from mujoco_playground import registry
    return registry


def check_playground_name(name: str) -> None:
    """UnknownEnvError naming the closest Playground envs, or naming the robot models a
    robot task needs when they are not on this machine."""
    registry = _registry()
    known = sorted(registry.ALL_ENVS)
    if name not in known:
        close = difflib.get_close_matches(name, known, n=5, cutoff=0.4)
        raise UnknownEnvError(
            f"unknown MuJoCo Playground env {name!r}; closest: {', '.join(close) or 'none'}; "
            f"registered: {', '.join(known)}")
    if name not in registry.dm_control_suite.ALL_ENVS:
        from mujoco_playground._src.mjx_env import MENAGERIE_PATH

        if not MENAGERIE_PATH.exists():
            raise UnknownEnvError(
                f"MuJoCo Playground env {name!r} needs the MuJoCo Menagerie robot models, which "
                f"are not at {MENAGERIE_PATH}: Playground downloads them with git on first use. "
                "Fix: on a machine with internet, run `python -c \"from mujoco_playground._src."
                "mjx_env import ensure_menagerie_exists as e; e()\"` and copy that folder "
                "here; the DM Control suite tasks (e.g. CheetahRun) need no download")


def playground_config(name: str, env_config: dict[str, Any]) -> dict[str, Any]:
    """The overrides to load ``name`` with: env_config checked against the env's default
    config (nested dicts flattened to ``a.b``), plus the ``impl`` picked for this jax; the
    keys a run needs beside them (``episode_length``, ``action_repeat``) come from the
    defaults where env_config does not set them.

    Raises:
        UnknownEnvError: no such env, or its models are missing.
        ValueError: a key the env's config does not have, or an unknown ``impl``.
    """
    check_playground_name(name)
    defaults = _flatten(_registry().get_default_config(name).to_dict())
    overrides = _flatten(env_config)
    for key in overrides:
        if key not in defaults:
            close = difflib.get_close_matches(key, sorted(defaults), n=3)
            raise ValueError(
                f"env.env_config.{key}: MuJoCo Playground env {name!r} has no config key "
                f"{key!r}{'; closest: ' + ', '.join(close) if close else ''}. Its keys: "
                f"{', '.join(sorted(defaults))}")
    if "impl" in defaults:
        if "impl" not in overrides:
            import jax

            warp_runs = (jax.default_backend() != "cpu"
                         and importlib.util.find_spec("warp") is not None)
            overrides["impl"] = defaults["impl"] if warp_runs else "jax"
        elif overrides["impl"] not in IMPLEMENTATIONS:
            raise ValueError(f"env.env_config.impl={overrides['impl']!r}: MuJoCo Playground env "
                             f"{name!r} runs on one of {', '.join(IMPLEMENTATIONS)}")
    for key in ("episode_length", "action_repeat"):
        overrides.setdefault(key, defaults[key])
    return overrides


def _flatten(config: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, dict) and value:
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


@functools.lru_cache(maxsize=8)
def _load(name: str, overrides: tuple[tuple[str, Any], ...]) -> Any:
    """The env, its reset and step traced once (its model is built once per config in a
    process)."""
    return TracedOnce(_registry().load(name, config_overrides=dict(overrides)))


def _loaded(name: str, env_config: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The env and the overrides it was loaded with."""
    overrides = playground_config(name, env_config)
    return _load(name, config_key(overrides)), overrides


def _observation_size(name: str, env: Any) -> int:
    size = env.observation_size
    if not isinstance(size, int):
        raise TypeError(f"MuJoCo Playground env {name!r} has dict observations ({size}); "
                        "neurorun policies need one flat observation vector")
    return size


def playground_spaces(name: str, **env_config: Any) -> tuple[spaces.Box, spaces.Box]:
    """Observation and action Box of a Playground env, found without compiling anything."""
    env, _ = _loaded(name, env_config)
    return box(_observation_size(name, env)), box(env.action_size, 1.0)


def batched_playground_env(name: str, episode_length: int | None = None, /,
                           **env_config: Any) -> Any:
    """A Playground env, episodes ended but not reset, vectorized over its reset keys:
    ``reset(keys)`` with one key per env makes a batch of ``len(keys)``.

    Args:
        name: a Playground env name (``mujoco_playground.registry.ALL_ENVS``).
        episode_length: neurorun's limit; the episode ends at the earlier of it and the
            env config's ``episode_length``.
        env_config: overrides of the env's default config (``episode_length``,
            ``action_repeat``, ``impl``, reward settings, ...).
    """
    from brax.envs.wrappers.training import EpisodeWrapper, VmapWrapper

    env, config = _loaded(name, env_config)
    _observation_size(name, env)  # flat observations only
    length = int(config["episode_length"])
    if episode_length is not None:
        length = min(length, int(episode_length))
    return VmapWrapper(EpisodeWrapper(env, length, int(config["action_repeat"])))
