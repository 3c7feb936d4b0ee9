"""``make_env``: one spec string picks the backend.

Specs: ``"gym::Id"`` or a bare gymnasium ``"Id"``; ``"envpool::Id"``; ``"brax::name"``;
``"playground::Name"`` (MuJoCo Playground); ``"pkg.module:factory"`` (a callable taking
``num_envs`` and the env_config keywords, returning a gymnasium VectorEnv). ``resolve_backend``
turns a bare id and ``env.backend`` into a spec.
"""

from __future__ import annotations

from typing import Any

import torch
from gymnasium import spaces

from neurorun.envs.base import TorchVecEnv, check_observation_space, policy_action_space
from neurorun.envs.jax_env import JAX_BACKENDS, JaxVecEnv, batched_jax_env
from neurorun.imports import import_object, is_import_path

PREFIXES = ("gym", "envpool", "brax", "playground")  # spec prefixes: `<prefix>::<name>`
BACKEND_CHOICES = ("auto", "gymnasium", "envpool")  # env.backend, for bare gymnasium ids


def resolve_backend(spec: str, backend: str = "auto") -> str:
    """The spec a run uses: a bare id with ``backend`` becomes ``Id`` or ``envpool::Id``.

    ``auto`` picks EnvPool for the ids whose equivalence with gymnasium is tested
    (``EQUIVALENT_IDS``, less ``AUTO_GYMNASIUM``) when EnvPool is installed; other specs are
    returned as they are.

    Raises:
        ValueError: an unknown backend, or one that contradicts the spec's own prefix.
        ImportError: ``envpool`` asked for but not installed.
    """
    from neurorun.envs.envpool_env import (
        AUTO_GYMNASIUM,
        EQUIVALENT_IDS,
        envpool_available,
        import_envpool,
    )

    if backend not in BACKEND_CHOICES:
        raise ValueError(f"env.backend={backend!r}; expected one of {list(BACKEND_CHOICES)}")
    kind, name = parse_spec(spec)
    explicit = "::" in spec or kind == "factory"
    if explicit:
        wanted = {"gymnasium": "gym", "envpool": "envpool"}.get(backend)
        if wanted is not None and wanted != kind:
            raise ValueError(f"env.backend={backend} contradicts env.id={spec!r}; use the bare "
                             f"id with env.backend, or env.backend=auto")
        return spec
    if backend == "envpool":
        import_envpool()
        return f"envpool::{name}"
    if (backend == "auto" and name in EQUIVALENT_IDS and name not in AUTO_GYMNASIUM
            and envpool_available()):
        return f"envpool::{name}"
    return name


def parse_spec(spec: str) -> tuple[str, str]:
    """``(backend, name)`` with backend one of BACKENDS."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"env spec {spec!r}: expected 'gym::Id', 'Id', 'envpool::Id', "
                         "'brax::name', 'playground::Name' or 'pkg.module:factory'")
    spec = spec.strip()
    prefix, sep, rest = spec.partition("::")
    if sep:
        if prefix not in PREFIXES:
            raise ValueError(f"env spec {spec!r}: unknown backend {prefix!r}; expected one of "
                             f"{', '.join(p + '::' for p in PREFIXES)}")
        return prefix, rest
    if is_import_path(spec):
        return "factory", spec
    return "gym", spec


def _load_factory(spec: str) -> Any:
    factory = import_object(spec, "env")
    if not callable(factory):
        raise AttributeError(f"env {spec!r}: {factory!r} is not callable; expected a function "
                             "or class that returns the env")
    return factory


def make_env(
    spec: str,
    num_envs: int,
    *,
    device: torch.device | str = "cpu",
    vectorization: str = "auto",
    seed: int | None = None,
    episode_length: int | None = None,
    num_threads: int | None = None,
    **env_config: Any,
) -> TorchVecEnv:
    """A TorchVecEnv of ``num_envs`` environments.

    Args:
        spec: ``"gym::Id"``, ``"Id"``, ``"envpool::Id"``, ``"brax::name"``,
            ``"playground::Name"`` or ``"pkg.module:factory"``.
        num_envs: number of environments.
        device: torch device of observations, rewards and dones.
        vectorization: gymnasium only: "auto" (the env's own vectorized implementation when
            gymnasium has one, else "sync"), "native", "sync" or "async".
        seed: seeds the first ``reset`` (later resets take their own seed).
        episode_length: end episodes after this many steps (or at the env's own limit when
            that comes first). Not supported for factories: limit the episodes there.
        num_threads: EnvPool's threads (None: the CPUs this process may use); EnvPool only.
        env_config: keyword arguments of the environment (gym.make / EnvPool's options /
            brax.envs.create / Playground config overrides / the factory).

    Raises:
        UnknownEnvError: no such gymnasium id, EnvPool id, brax or Playground name (the
            message names close ones), or a Playground robot task without its models.
        TypeError: the observation space is not a Box, or the action space is neither Box
            nor Discrete.
    """
    if int(num_envs) < 1:
        raise ValueError(f"num_envs={num_envs}; expected at least 1")
    backend, name = parse_spec(spec)
    if num_threads is not None and backend != "envpool":
        raise ValueError(f"num_threads={num_threads} applies to EnvPool envs only, not to "
                         f"{spec!r}. Fix: num_threads=null, or an envpool:: env")
    if backend in JAX_BACKENDS:
        batch = batched_jax_env(backend, name, int(num_envs), episode_length, **env_config)
        return JaxVecEnv(spec, batch, int(num_envs), device=device, seed=seed)
    if backend == "envpool":
        from neurorun.envs.envpool_env import EnvPoolVecEnv

        return EnvPoolVecEnv(name, int(num_envs), device=device, seed=seed,
                             episode_length=episode_length, num_threads=num_threads,
                             **env_config)
    from neurorun.envs.gym_env import GymVecEnv, make_factory_env, make_gym_vector_env

    if backend == "factory":
        if episode_length is not None:
            raise ValueError(f"episode_length={episode_length} cannot be applied to the env "
                             f"factory {spec!r}: make the factory's envs end their episodes")
        env = make_factory_env(_load_factory(name), spec, int(num_envs), device, **env_config)
    else:
        vec = make_gym_vector_env(name, int(num_envs), vectorization, episode_length,
                                  **env_config)
        env = GymVecEnv(vec, spec, device)
    env.reset(seed=seed)
    return env


def env_spaces(spec: str, **env_config: Any) -> tuple[spaces.Box, spaces.Box, spaces.Space]:
    """(observation Box, policy action Box, env action space) without building a vector env
    (brax and Playground: no compilation; factories build a 1-env vector env)."""
    backend, name = parse_spec(spec)
    if backend in JAX_BACKENDS:
        from neurorun.envs.brax_env import brax_spaces
        from neurorun.envs.playground_env import playground_spaces

        spaces_of = brax_spaces if backend == "brax" else playground_spaces
        obs_space, act_space = spaces_of(name, **env_config)
        return obs_space, act_space, act_space
    if backend == "envpool":
        from neurorun.envs.envpool_env import envpool_spaces

        obs_space, act_space = envpool_spaces(name, **env_config)
        return check_observation_space(obs_space, spec), policy_action_space(act_space, spec), \
            act_space
    if backend == "factory":
        env = make_env(spec, 1, **env_config)
        try:
            return env.single_observation_space, env.single_action_space, env.env_action_space
        finally:
            env.close()
    from neurorun.envs.gym_env import gym_spaces

    obs_space, act_space = gym_spaces(name, **env_config)
    return check_observation_space(obs_space, spec), policy_action_space(act_space, spec), \
        act_space
