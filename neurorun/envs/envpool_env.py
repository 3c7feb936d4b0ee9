"""EnvPool backend: C++ vector envs (``envpool.make_gymnasium``) behind the torch interface.

EnvPool steps its envs on its own threads; neurorun drives it in sync mode (``batch_size`` =
``num_envs``) and sends actions only for the envs still needed (``env_id``), so results never
depend on thread timing. Its autoreset is gymnasium's next-step autoreset: the step after
``done`` resets that env and returns its first observation, reward 0, ``done`` False.

Seeds: EnvPool fixes each env's seed when the pool is created (``env_seed``) and ignores
``reset(seed=...)``. ``reset(seeds)`` therefore builds a new pool whose env ``i`` is seeded
``seeds[i]`` (the price of seeding every evaluation, kept low by ``envpool_models``: the
costs are in docs/benchmarks.md); an env's later episodes continue its own generator. The
same seeds give the same episodes. The first ``reset`` builds the first pool; spaces and
options come from EnvPool's spec (no env built).

Gymnasium's MuJoCo v5 envs take ``include_<part>_in_observation`` options (Humanoid's cinert,
cvel, qfrc_actuator and cfrc_ext; Ant's cfrc_ext) that EnvPool's versions lack. Given in
``env_config``, they are served here: the pool makes the whole observation, in gymnasium's
layout, and the parts left out are dropped from it (`observation_columns`).
"""

from __future__ import annotations

import difflib
import functools
import logging
import os
import re
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch
from gymnasium.spaces import Box
from torch import Tensor

from neurorun.common.extras import require
from neurorun.common.settings import fits
from neurorun.envs.base import (
    ActionAdapter,
    EnvStepError,
    TorchVecEnv,
    UnknownEnvError,
    check_observation_space,
    own_episode_limit,
    policy_action_space,
)
from neurorun.envs.envpool_models import lean_model_options

logger = logging.getLogger(__name__)

# EnvPool options that neurorun sets itself, not through env_config
_RESERVED = ("num_envs", "batch_size", "num_threads", "seed", "env_seed", "max_num_players",
             "thread_affinity_offset", "base_path", "gym_reset_return_info")
# gymnasium's option that leaves a part of a MuJoCo v5 env's observation out
INCLUDE_PART = re.compile(r"include_(\w+)_in_observation")


def import_envpool() -> Any:
    """The envpool module, or MissingExtraError (an ImportError) naming the extra that
    installs it."""
    require("envpool", "an envpool:: env")
    import envpool

    return envpool


def envpool_available() -> bool:
    try:
        import_envpool()
    except ImportError:
        return False
    return True


def default_num_threads() -> int:
    """The CPUs this process may use (a ray actor's share where ray pins it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def check_envpool_id(env_id: str) -> None:
    """UnknownEnvError naming the closest EnvPool ids."""
    known = list(import_envpool().list_all_envs())
    if env_id not in known:
        close = difflib.get_close_matches(env_id, known, n=5, cutoff=0.5)
        raise UnknownEnvError(
            f"EnvPool has no env {env_id!r}; closest: {', '.join(close) or 'none'}. Use an id "
            "from envpool.list_all_envs(), or the gymnasium backend (env.backend=gymnasium)")


def pool_options(env_config: Mapping[str, Any]) -> dict[str, Any]:
    """``env_config`` without gymnasium's ``include_<part>_in_observation`` options (served by
    `observation_columns`, not by EnvPool)."""
    return {key: value for key, value in env_config.items() if not INCLUDE_PART.fullmatch(key)}


def observation_columns(env_id: str, env_config: Mapping[str, Any],
                        length: int) -> np.ndarray | None:
    """The columns of EnvPool's observation (``length`` values, gymnasium's layout) that
    gymnasium's env with ``env_config``'s ``include_<part>_in_observation`` options observes
    (None: every column, no such option given). The parts and their lengths are gymnasium's
    own (its env's ``observation_structure``).

    Raises:
        ValueError: an option gymnasium's env does not take, a value that is not true or
            false, or an observation whose parts do not add up to ``length``.
    """
    asked = {key: value for key, value in env_config.items() if INCLUDE_PART.fullmatch(key)}
    if not asked:
        return None
    parts = _observation_parts(env_id, bool(env_config.get(
        "exclude_current_positions_from_observation", True)))
    optional = [part for part in parts if part not in ("qpos", "qvel")]  # always observed
    for key, value in asked.items():
        if INCLUDE_PART.fullmatch(key)[1] not in optional:
            options = [f"include_{part}_in_observation" for part in optional]
            fix = f"one of {', '.join(options)}, or remove it" if options else "remove it"
            raise ValueError(f"env_config.{key}: gymnasium's {env_id} takes no option {key!r}"
                             f" (no part of its observation to leave out by that name). Fix: "
                             f"{fix}")
        if type(value) is not bool:
            raise ValueError(f"env_config.{key}={value!r}: expected true or false")
    if sum(parts.values()) != length:
        raise ValueError(f"env_config: the include_*_in_observation options read {env_id}'s "
                         f"observation as gymnasium lays it out ({sum(parts.values())} values), "
                         f"and EnvPool's with these options has {length}. Fix: remove the "
                         "options that change EnvPool's layout, or env.backend=gymnasium")
    kept, start = [], 0
    for part, size in parts.items():
        if asked.get(f"include_{part}_in_observation", True):
            kept.extend(range(start, start + size))
        start += size
    return np.asarray(kept, dtype=np.intp)


@functools.cache
def _observation_parts(env_id: str, exclude_current_positions: bool) -> dict[str, int]:
    """The parts of gymnasium's ``env_id`` observation in order, with their lengths ({} where
    gymnasium has no such env or it does not say)."""
    import gymnasium

    try:
        env = gymnasium.make(env_id, exclude_current_positions_from_observation=(
            exclude_current_positions))
    except Exception:  # no such gymnasium env, or one without that option
        return {}
    try:
        structure = getattr(env.unwrapped, "observation_structure", {})
    finally:
        env.close()
    return {part: int(size) for part, size in structure.items()
            if part != "skipped_qpos" and int(size) > 0}


def envpool_spec(env_id: str, env_config: dict[str, Any]) -> Any:
    """EnvPool's spec of the env with these options (spaces, config), building no env;
    gymnasium's ``include_<part>_in_observation`` options are left to `observation_columns`.

    Raises:
        UnknownEnvError: EnvPool has no such id. ValueError: an option it does not take.
    """
    check_envpool_id(env_id)
    envpool = import_envpool()
    env_config = pool_options(env_config)
    defaults = envpool.make_spec(env_id).config._asdict()
    known = set(defaults) - set(_RESERVED)
    for key in env_config:
        if key in _RESERVED:
            raise ValueError(f"env_config.{key} is set by neurorun for EnvPool (env.num_threads, "
                             "max_num_envs, seed); remove it from env_config")
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=3)
            raise ValueError(f"env_config.{key}: EnvPool's {env_id} takes no option {key!r}"
                             f"{'; closest: ' + ', '.join(close) if close else ''}. Its options: "
                             f"{', '.join(sorted(known))}. Fix: one of those, or the bare id "
                             "with env.backend=gymnasium for gymnasium's env and its options")
        default, value = defaults[key], env_config[key]
        wanted = type(default)
        if wanted in (int, float, bool, str) and not fits(value, wanted):
            raise ValueError(f"env_config.{key}={value!r}: EnvPool's {env_id} takes a "
                             f"{wanted.__name__} there (default {default!r})")
    own_episode_limit(env_config, None)  # a count where given
    return envpool.make_spec(env_id, **env_config)


@contextmanager
def _quiet_box_casts() -> Iterator[None]:
    """EnvPool builds its Box spaces (in its spec and in every pool) from float64 bounds with a
    float32 dtype, which makes gymnasium warn about lost precision on every run: not the
    user's to fix."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*precision lowered by casting",
                                category=UserWarning)
        yield


def _spaces(spec: Any, columns: np.ndarray | None = None) -> tuple[Any, Any]:
    """The spaces of ``spec``'s env, its observation cut to ``columns`` (None: all)."""
    with _quiet_box_casts():
        obs_space, act_space = spec.observation_space, spec.action_space
        if columns is not None:
            obs_space = Box(obs_space.low.reshape(-1)[columns],
                            obs_space.high.reshape(-1)[columns], dtype=obs_space.dtype)
    return obs_space, act_space


def _spec_and_columns(env_id: str, env_config: Mapping[str, Any]) -> tuple[Any, np.ndarray | None]:
    """EnvPool's spec of the env and the columns of its observation kept
    (`observation_columns`)."""
    spec = envpool_spec(env_id, dict(env_config))
    length = int(np.prod(spec.observation_space.shape))
    return spec, observation_columns(env_id, env_config, length)


def envpool_spaces(env_id: str, **env_config: Any) -> tuple[Any, Any]:
    """Observation and action space of the env."""
    return _spaces(*_spec_and_columns(env_id, env_config))


def make_pool(env_id: str, seeds: Sequence[int], num_threads: int,
               config: dict[str, Any], batch_size: int | None = None) -> Any:
    """A pool whose env i is seeded seeds[i] (id and options checked before): in sync mode, as
    neurorun steps it, unless a ``batch_size`` below the envs makes it async (benchmarks)."""
    count = len(seeds)
    return import_envpool().make_gymnasium(
        env_id, num_envs=count, batch_size=batch_size or count,
        num_threads=min(num_threads, count),
        seed=int(seeds[0]), env_seed=[int(s) % 2**31 for s in seeds], **config)


class EnvPoolVecEnv(TorchVecEnv):
    """``num_envs`` EnvPool envs of ``env_id`` stepped by ``num_threads`` threads.

    Args:
        env_id: an id of ``envpool.list_all_envs()``.
        num_envs: number of envs (one pool).
        device: torch device of ``reset``/``step`` results.
        seed: env ``i`` is seeded ``seed + i``.
        episode_length: end episodes after this many steps (or at the env's own limit).
        num_threads: EnvPool's worker threads (None: the CPUs this process may use).
        env_config: EnvPool options of the env (e.g. ``ctrl_cost_weight``).
    """

    host_arrays = True
    skips_inactive = True
    ends_episodes = True

    def __init__(self, env_id: str, num_envs: int, *, device: torch.device | str = "cpu",
                 seed: int | None = None, episode_length: int | None = None,
                 num_threads: int | None = None, **env_config: Any):
        self.env_id = env_id
        self.spec = f"envpool::{env_id}"
        self.num_envs = int(num_envs)
        self.device = torch.device(device)
        self.num_threads = int(num_threads) if num_threads is not None else default_num_threads()
        spec, self._columns = _spec_and_columns(env_id, env_config)
        env_config = pool_options(env_config)  # the parts left out: self._columns
        # the options of every pool: env_config, the episode length, a lean model
        self._config = {**env_config, **lean_model_options(spec, env_config)}
        limit = spec.config.max_episode_steps
        if episode_length is not None:  # the earlier of the env's limit and neurorun's
            self._config["max_episode_steps"] = int(
                episode_length if limit is None else min(int(limit), int(episode_length)))
        base = 0 if seed is None else int(seed)
        self._seeds = [base + i for i in range(self.num_envs)]
        self.pool: Any = None  # built by reset: every new seed needs a new pool
        obs_space, self.env_action_space = _spaces(spec, self._columns)
        self.single_observation_space = check_observation_space(obs_space, self.spec)
        self.single_action_space = policy_action_space(self.env_action_space, self.spec)
        self._adapt = ActionAdapter(self.env_action_space)
        dtype = getattr(self.env_action_space, "dtype", None)
        self._action_dtype = np.dtype(dtype) if dtype is not None else None
        # the last observations, replaced at every step (never written into: callers keep them)
        self._obs = np.zeros((self.num_envs, int(np.prod(self.single_observation_space.shape))),
                             dtype=np.float32)
        self._all = np.arange(self.num_envs, dtype=np.int32)
        self._cut = np.zeros(self.num_envs, dtype=bool)  # envs whose next step resets them
        self._cutting = False  # any of them (a flag: the common step reads no array)

    def reset_arrays(self, seed: int | Sequence[int] | None = None) -> np.ndarray:
        """A seed (env i: seed + i) or one seed per env; with a seed, a new pool is built."""
        if seed is not None:
            self._seeds = ([int(seed) + i for i in range(self.num_envs)] if np.isscalar(seed)
                           else [int(s) for s in seed])
        with _quiet_box_casts():  # a new pool, and its first reset, build its spaces
            if seed is not None or self.pool is None:
                self.close()
                self.pool = self._new_pool()
            obs, _ = self.pool.reset()
        self._obs = self._observed(obs, self.num_envs).astype(np.float32)
        self._cut[:], self._cutting = False, False
        return self._obs

    def _observed(self, obs: np.ndarray, count: int) -> np.ndarray:
        """EnvPool's observations of ``count`` envs, a row each, in the columns kept."""
        rows = obs.reshape(count, -1)
        return rows if self._columns is None else rows[:, self._columns]

    def end_episodes(self, envs: np.ndarray) -> None:
        self._cut[envs] = True
        self._cutting = True

    def _reset_cut(self, active: np.ndarray | None) -> np.ndarray:
        """Reset the cut envs among ``active`` (None: all), as EnvPool's autoreset would after
        ``done``; returns the envs of ``active`` left to step."""
        reset = self._cut.copy() if active is None else self._cut & active
        ids = self._all[reset]
        if len(ids):
            try:
                obs, _ = self.pool.reset(ids)
            except Exception as error:  # a C++ exception surfaces as RuntimeError
                raise EnvStepError(f"env {self.spec!r}: EnvPool raised {type(error).__name__} "
                                   f"resetting envs {ids.tolist()}: {error}", None) from error
            self._obs = self._obs.copy()
            self._obs[ids] = self._observed(obs, len(ids))
        self._cut &= ~reset
        # envs left out (idle slots) stay cut until stepped: their reset waits for them
        self._cutting = bool(self._cut.any())
        return ~reset if active is None else active & ~reset

    def _new_pool(self) -> Any:
        """A pool of the current seeds. One that fails to build from the copy of its models
        without textures (removed under a long run, an EnvPool that reads other files there)
        is built from EnvPool's own models, from then on."""
        try:
            return make_pool(self.env_id, self._seeds, self.num_threads, self._config)
        except RuntimeError as error:  # a C++ exception (EnvPool could not load the model)
            if "base_path" not in self._config:
                raise
            logger.warning("EnvPool could not build %s from neurorun's copy of its models "
                           "(%s); using EnvPool's own", self.env_id, error)
            del self._config["base_path"]
            return make_pool(self.env_id, self._seeds, self.num_threads, self._config)

    def step_arrays(
        self, actions: np.ndarray, active: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``step`` on numpy arrays. The env never writes into an observation array it returned
        (it replaces its record of the last observations): a caller may keep them."""
        if self.pool is None:
            self.reset_arrays()
        if self._cutting:
            active = self._reset_cut(active)
        everyone = active is None or np.count_nonzero(active) == self.num_envs
        if not everyone and not np.count_nonzero(active):
            return self._obs, np.zeros(self.num_envs), np.zeros(self.num_envs, dtype=bool)
        # every env stepped (the common case): EnvPool's arrays are used as they come; its
        # sync mode returns the envs in the order of the ids sent
        ids = None if everyone else self._all[active]
        env_actions = self._adapt(actions if everyone else actions[ids])
        if self._action_dtype is not None and env_actions.dtype != self._action_dtype:
            env_actions = env_actions.astype(self._action_dtype)
        try:
            obs, rew, terminated, truncated, _ = self.pool.step(env_actions, ids)
        except Exception as error:  # a C++ exception surfaces as RuntimeError
            raise EnvStepError(f"env {self.spec!r}: EnvPool raised {type(error).__name__}: "
                               f"{error}", None) from error
        if everyone:
            self._obs = self._observed(obs, self.num_envs).astype(np.float32)
            return self._obs, rew.astype(np.float64), terminated | truncated
        self._obs = self._obs.copy()
        self._obs[ids] = self._observed(obs, len(ids))
        reward = np.zeros(self.num_envs)
        reward[ids] = rew
        done = np.zeros(self.num_envs, dtype=bool)
        done[ids] = terminated | truncated
        return self._obs, reward, done

    def reset(self, seed: int | Sequence[int] | None = None) -> Tensor:
        return torch.from_numpy(self.reset_arrays(seed)).to(self.device)

    def step(
        self, actions: Tensor, active: np.ndarray | None = None,
    ) -> tuple[Tensor, Tensor, Tensor]:
        arrays = self.step_arrays(actions.detach().cpu().numpy(), active)
        return tuple(torch.from_numpy(a).to(self.device) for a in arrays)  # type: ignore

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
            self.pool = None


# The ids tested equal on EnvPool and gymnasium (tests/envs/test_envpool_equivalence.py:
# spaces, options, time limit, and the mean returns of fixed trained policies within 3
# standard errors). `env.backend=auto` serves them with EnvPool, except AUTO_GYMNASIUM.
EQUIVALENT_IDS = (
    "CartPole-v1", "Pendulum-v1", "LunarLander-v3", "LunarLanderContinuous-v3",
    "BipedalWalker-v3", "Swimmer-v5", "Hopper-v5", "HalfCheetah-v5", "Walker2d-v5", "Ant-v5",
    "Humanoid-v5", "InvertedPendulum-v5", "InvertedDoublePendulum-v5",
)
# Tested equal, but left on gymnasium by `auto`: gymnasium's own numpy vector env steps it
# faster than EnvPool's threads do in neurorun (docs/benchmarks.md: a microsecond simulator,
# where each EnvPool step's hand-over to its threads costs more).
AUTO_GYMNASIUM = ("CartPole-v1",)
