"""brax backend: a batch of brax envs behind the torch interface.

brax is created with ``auto_reset=False``: brax's AutoResetWrapper returns every env to the
same cached first state, and resets in the same step. Instead one jitted step function does
gymnasium's next-step autoreset: envs that were done on the previous call get a fresh initial
state (new random key) and report reward 0, done False. The step and reset functions are
compiled once per env object (its output state is cast to strong types, so states from reset
and from step share one jit cache key) and warmed up at construction. jax -> torch goes
through dlpack (no copy); torch -> jax copies (arrays made from torch by dlpack are
"committed" and would change the jit cache key).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from torch import Tensor

from neurorun.envs.base import TorchVecEnv, UnknownEnvError

DEFAULT_EPISODE_LENGTH = 1000  # brax.envs.create's default


def _brax_envs() -> Any:
    """brax.envs, imported on first use: jax takes seconds to load, and only brax:: ids
    need it (brax is a dependency of neurorun, not an extra)."""
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
    obs_space = spaces.Box(-np.inf, np.inf, shape=(int(np.prod(obs.shape)),), dtype=np.float32)
    act_space = spaces.Box(-1.0, 1.0, shape=(int(env.action_size),), dtype=np.float32)
    return obs_space, act_space


class BraxVecEnv(TorchVecEnv):
    """``brax.envs.create(name, batch_size=num_envs, auto_reset=False, ...)`` as a TorchVecEnv.

    Args:
        name: a brax env name (``brax.envs.get_environment``).
        num_envs: batch size.
        device: torch device of the returned tensors.
        seed: seed of the jax key used for resets (reset(seed) replaces it).
        episode_length: neurorun's limit; the episode ends at the earlier of it and brax's
            ``episode_length`` (env_config, default 1000).
        env_config: brax.envs.create keywords (``backend``, ``episode_length``,
            ``action_repeat``, env constructor arguments).
    """

    def __init__(self, name: str, num_envs: int, *, device: torch.device | str = "cpu",
                 seed: int | None = None, episode_length: int | None = None,
                 **env_config: Any):
        import jax

        check_brax_name(name)
        self.spec = f"brax::{name}"
        self.num_envs = int(num_envs)
        self.device = torch.device(device)
        config = dict(env_config)
        length = int(config.pop("episode_length", DEFAULT_EPISODE_LENGTH))
        if episode_length is not None:
            length = min(length, int(episode_length))
        env = _brax_envs().create(name, episode_length=length, auto_reset=False,
                                    batch_size=self.num_envs, **config)
        self._jax_reset = jax.jit(env.reset)
        self._jax_step = jax.jit(_next_step_autoreset(env))
        self.single_observation_space = spaces.Box(
            -np.inf, np.inf, shape=(int(env.observation_size),), dtype=np.float32)
        self.single_action_space = spaces.Box(-1.0, 1.0, shape=(int(env.action_size),),
                                              dtype=np.float32)
        self.env_action_space = self.single_action_space
        self._key = jax.random.PRNGKey(_seed_or_random(seed))
        self._warm_up()

    def _warm_up(self) -> None:
        zeros = torch.zeros(self.num_envs, self.single_action_space.shape[0])
        self.reset(0)
        for _ in range(2):  # a state from reset, then one from step
            self.step(zeros)
        self.reset(0)

    def _to_jax(self, actions: Tensor) -> Any:
        import jax.numpy as jnp

        actions = actions.detach().to(torch.float32)
        if actions.device.type == "cpu":
            return jnp.asarray(actions.numpy())
        import jax.dlpack

        return jnp.array(jax.dlpack.from_dlpack(actions.contiguous()), copy=True)

    def _torch(self, array: Any) -> Tensor:
        return torch.from_dlpack(array).to(self.device)

    def reset(self, seed: int | Sequence[int] | None = None) -> Tensor:
        import jax

        if seed is not None and not np.isscalar(seed):
            seed = seed[0]  # one key for the whole batch
        if seed is not None:
            self._key = jax.random.PRNGKey(int(seed))
        self._key, key = jax.random.split(self._key)
        self._state = self._jax_reset(key)
        self._pending = jax.numpy.zeros(self.num_envs, dtype=bool)
        return self._torch(self._state.obs)

    def step(
        self, actions: Tensor, active: np.ndarray | None = None,
    ) -> tuple[Tensor, Tensor, Tensor]:
        # every env steps: one compiled batch step costs the same with or without the others
        self._state, self._pending, self._key = self._jax_step(
            self._state, self._to_jax(actions), self._pending, self._key)
        return (self._torch(self._state.obs), self._torch(self._state.reward),
                self._torch(self._pending))

    def close(self) -> None:
        self._state = None


def _next_step_autoreset(env: Any) -> Any:
    """step(state, action, pending, key) -> (state, done, key) with next-step autoreset."""
    import jax
    import jax.numpy as jnp

    def where(mask: Any, a: Any, b: Any) -> Any:
        return jnp.where(mask.reshape(mask.shape + (1,) * (a.ndim - 1)), a, b)

    def reset_pending(state: Any, stepped: Any, pending: Any, key: Any) -> Any:
        fresh = env.reset(key)
        merged = jax.tree_util.tree_map(lambda a, b: where(pending, a, b), fresh, stepped)
        return merged.replace(reward=jnp.where(pending, 0.0, stepped.reward),
                              done=jnp.where(pending, 0.0, stepped.done))

    def step(state: Any, action: Any, pending: Any, key: Any) -> Any:
        key, reset_key = jax.random.split(key)
        stepped = env.step(state, action)
        stepped = jax.lax.cond(pending.any(), reset_pending, lambda s, st, p, k: st,
                               state, stepped, pending, reset_key)
        # brax's step returns weakly typed floats where reset returns strong ones; strong
        # types everywhere give the state one jit cache key, so step compiles once
        stepped = jax.tree_util.tree_map(lambda x: jax.lax.convert_element_type(x, x.dtype),
                                         stepped)
        return stepped, stepped.done > 0, key

    return step


def _seed_or_random(seed: int | None) -> int:
    if seed is not None:
        return int(seed)
    return int(np.random.default_rng().integers(2**31 - 1))
