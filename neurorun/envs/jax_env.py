"""A batch of jax envs (brax, MuJoCo Playground) behind the torch interface.

The backends hand over a *batched* env in brax's interface (``reset(keys) -> state`` with one
key per env, ``step(state, action) -> state`` with ``obs``, ``reward``, ``done``) that ends
episodes itself (brax's EpisodeWrapper) but does not reset them. One jitted step function does
gymnasium's next-step autoreset: envs that were done on the previous call start a new episode
from their own key and report reward 0, done False. Every episode is seeded
(``seeds_episodes``): its key is its seed's (``episode_keys``), so an episode is the same in
whichever slot it runs. brax's own AutoResetWrapper is not used: it returns every env to the
same cached first state, in the same step. The step and
reset functions are compiled once per env object (the step's output state is cast to strong
types, so states from reset and from step share one jit cache key) and warmed up at
construction; jax's persistent cache keeps the compiled programs for the next run. jax ->
torch goes through dlpack (no copy); torch -> jax copies (arrays made from torch by dlpack are
"committed" and would change the jit cache key).
"""

from __future__ import annotations

import functools
import logging
import os
import stat
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from neurorun.envs.base import TorchVecEnv, box

log = logging.getLogger(__name__)

class JaxVecEnv(TorchVecEnv):
    """A batched jax env (brax's interface, episodes ended but not reset) as a TorchVecEnv.

    Args:
        spec: the env spec this env was made from (``brax::ant``).
        env: the batched env (``batched_jax_env``); ``reset(keys)`` makes the whole batch, its
            ``observation_size`` (flat) and ``action_size`` (in [-1, 1]) are one env's.
        num_envs: its batch size.
        device: torch device of the returned tensors.
        seed: env i's first episode is seeded ``seed + i`` (reset(seed) replaces it).
    """

    seeds_episodes = True
    ends_episodes = True

    def __init__(self, spec: str, env: Any, num_envs: int, *,
                 device: torch.device | str = "cpu", seed: int | None = None):
        import jax

        self.spec = spec
        self.num_envs = int(num_envs)
        self.device = torch.device(device)
        use_compilation_cache()
        self._jax_reset = jax.jit(env.reset)
        self._jax_step = jax.jit(next_step_autoreset(env))
        self._jax_next_keys = jax.jit(next_keys)
        self.single_observation_space = box(env.observation_size)
        self.single_action_space = box(env.action_size, 1.0)
        self.env_action_space = self.single_action_space
        self._seed = _seed_or_random(seed)
        # compiling takes from seconds to minutes on a CPU, with nothing else to show for it
        log.info("compiling %s for %d envs on jax's %s (once per env batch)...", spec,
                 self.num_envs, jax.default_backend())
        start = time.perf_counter()
        self._warm_up()
        log.info("compiled %s in %.0f s", spec, time.perf_counter() - start)

    def _warm_up(self) -> None:
        zeros = torch.zeros(self.num_envs, self.single_action_space.shape[0])
        self.reset(0)
        for _ in range(2):  # a state from reset, then one from step
            self.step(zeros)
        self.reset(self._seed)

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
        """Env i starts from the key of ``seed[i]`` (an int: ``seed + i``; None: random); its
        later episodes from the keys that follow (``next_keys``) unless seeded."""
        import jax.numpy as jnp

        if seed is None:
            seed = _seed_or_random(None)
        seeds = (np.asarray(seed, dtype=np.int64).reshape(-1) if not np.isscalar(seed)
                 else int(seed) + np.arange(self.num_envs))
        keys = jnp.asarray(episode_keys(seeds))
        self._state = self._jax_reset(keys)
        self._keys = self._jax_next_keys(keys)  # each env's next episode
        self._pending = jnp.zeros(self.num_envs, dtype=bool)
        return self._torch(self._state.obs)

    def seed_next_episodes(self, envs: np.ndarray, seeds: np.ndarray) -> None:
        """The next episode of each of ``envs`` starts from its seed's key."""
        self._keys = self._keys.at[np.asarray(envs)].set(episode_keys(seeds))

    def end_episodes(self, envs: np.ndarray) -> None:
        self._pending = self._pending.at[np.asarray(envs)].set(True)

    def step(
        self, actions: Tensor, active: np.ndarray | None = None,
    ) -> tuple[Tensor, Tensor, Tensor]:
        # every env steps: one compiled batch step costs the same with or without the others
        self._state, self._pending, self._keys = self._jax_step(
            self._state, self._to_jax(actions), self._pending, self._keys)
        return (self._torch(self._state.obs), self._torch(self._state.reward),
                self._torch(self._pending))

    def close(self) -> None:
        self._state = None


class TracedOnce:
    """One jax env (brax's interface, not batched) whose ``reset`` and ``step`` are jitted
    once, so that every program calling them reuses one trace of the physics: the spaces, the
    memory estimate, the evaluation's start and stage programs of each batch size (vmapped
    over it), the center's test episodes and the host path's step all call the same two jitted
    functions, and jax traces a jitted function once per argument shapes (not per batch size:
    vmap batches the traced program), and a trace of the physics takes seconds. The backends
    build one per env config and process (their caches), so later runs in the process trace
    nothing again.
    """

    def __init__(self, env: Any):
        import jax

        self.env = env
        self.reset = jax.jit(env.reset)
        self.step = jax.jit(env.step)

    def __getattr__(self, name: str) -> Any:  # action_size, sys, ...
        if name == "__setstate__":
            raise AttributeError(name)
        return getattr(self.env, name)

    @functools.cached_property
    def observation_size(self) -> Any:
        """An observation's length (a mapping of shapes for dict observations), from the shape
        of the jitted reset's output (its trace, which the programs then reuse)."""
        import jax

        obs = jax.eval_shape(self.reset, jax.ShapeDtypeStruct((2,), np.uint32)).obs
        if isinstance(obs, Mapping):
            return jax.tree_util.tree_map(lambda leaf: leaf.shape, obs)
        return obs.shape[-1]


def config_key(config: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """``config`` as a hashable key of a backend's env cache (lists become tuples)."""
    return tuple(sorted((key, tuple(value) if isinstance(value, list) else value)
                        for key, value in config.items()))


def use_compilation_cache() -> None:
    """Keep jax's compiled programs on disk, so the next run of the same env and batch size
    loads them instead of compiling again (CartpoleBalance: 53 s -> 11 s here): in
    ``$JAX_COMPILATION_CACHE_DIR`` when set, else ``~/.cache/neurorun/jax``. A cached program
    runs as native code in this process, so a folder that other users may write to, or one
    this process cannot write, is not used: the run goes on without the cache and says so
    once (``cache_problem``)."""
    import jax

    if not jax.config.jax_compilation_cache_dir:
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        jax.config.update("jax_compilation_cache_dir", str(cache / "neurorun" / "jax"))
    folder = Path(jax.config.jax_compilation_cache_dir)
    problem = cache_problem(folder)
    if problem is not None and jax.config.jax_enable_compilation_cache:
        jax.config.update("jax_enable_compilation_cache", False)
        log.warning("jax's compilation cache %s is not used: %s; every program compiles anew "
                    "in each run. Fix: %s", folder, *problem)


def cache_problem(folder: Path) -> tuple[str, str] | None:
    """Why ``folder`` cannot serve as jax's compilation cache (made here, mode 0700, when
    missing), and the fix; None: it can."""
    fix = (f"chmod go-w {folder} (and own it), or JAX_COMPILATION_CACHE_DIR=<a folder of "
           "yours>")
    if folder.exists() and not folder.is_dir():
        return "it is not a folder", "JAX_COMPILATION_CACHE_DIR=<a folder of yours>"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = folder.stat()
    except OSError as error:
        return (f"it cannot be made ({error.strerror or error})",
                "JAX_COMPILATION_CACHE_DIR=<a writable folder of yours>")
    if info.st_uid != os.geteuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return ("another user may write to it (its programs would run as native code in this "
                "process)", fix)
    if not os.access(folder, os.W_OK | os.X_OK):
        return ("it cannot be written", f"chmod u+w {folder}, or JAX_COMPILATION_CACHE_DIR="
                "<a writable folder of yours>")
    return None


def episode_keys(seeds: Any) -> np.ndarray:
    """``(len(seeds), 2)`` uint32: the jax PRNG key of each episode seed (its high and low
    32 bits; ``jax.random.PRNGKey(seed)`` for seeds below 2**32). A pair's episode starts from
    the key of its seed, in either rollout path and on any slot or device."""
    seeds = np.asarray(seeds, dtype=np.uint64).reshape(-1)
    return np.stack([seeds >> np.uint64(32), seeds & np.uint64(0xFFFFFFFF)],
                    axis=-1).astype(np.uint32)


def next_keys(keys: Any) -> Any:
    """The key each env's next episode starts from when nothing seeds it (the slot's own
    sequence, as a gymnasium env continues its generator)."""
    import jax

    return jax.vmap(jax.random.fold_in, in_axes=(0, None))(keys, 1)


def next_step_autoreset(env: Any) -> Any:
    """step(state, action, pending, keys) -> (state, done, keys) with next-step autoreset:
    envs ``pending`` start a new episode from their row of ``keys`` (B, 2), which then moves
    on (``next_keys``); actions are clipped to the action space [-1, 1]. A batch whose every
    env is pending is not stepped, only reset (the compiled evaluation's first step: its carry
    starts with a state of zeros). The compiled evaluation (:mod:`neurorun.problems.
    jax.rollout`) steps with this function too."""
    import jax
    import jax.numpy as jnp

    def where(mask: Any, a: Any, b: Any) -> Any:
        return jnp.where(mask.reshape(mask.shape + (1,) * (a.ndim - 1)), a, b)

    def reset_pending(state: Any, stepped: Any, pending: Any, keys: Any) -> Any:
        fresh = env.reset(keys)
        merged = jax.tree_util.tree_map(lambda a, b: where(pending, a, b), fresh, stepped)
        return merged.replace(reward=jnp.where(pending, 0.0, stepped.reward),
                              done=jnp.where(pending, 0.0, stepped.done))

    def physics(state: Any, action: Any) -> Any:
        # brax's step returns weakly typed floats where reset returns strong ones; strong
        # types everywhere give the state one jit cache key, so step compiles once
        stepped = env.step(state, jnp.clip(action, -1.0, 1.0))
        return jax.tree_util.tree_map(lambda x, s: jax.lax.convert_element_type(x, s.dtype),
                                      stepped, state)

    def step(state: Any, action: Any, pending: Any, keys: Any) -> Any:
        stepped = jax.lax.cond(pending.all(), lambda s, a: s, physics, state, action)
        stepped = jax.lax.cond(pending.any(), reset_pending, lambda s, st, p, k: st,
                               state, stepped, pending, keys)
        return stepped, stepped.done > 0, jnp.where(pending[:, None], next_keys(keys), keys)

    return step


def _seed_or_random(seed: int | None) -> int:
    if seed is not None:
        return int(seed)
    return int(np.random.default_rng().integers(2**31 - 1))
