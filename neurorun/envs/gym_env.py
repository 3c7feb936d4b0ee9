"""gymnasium backend: a ``gymnasium.vector.VectorEnv`` behind the torch interface.

numpy <-> torch conversion happens once per vector step, on whole batches; ``step_arrays``
skips it for callers that work in numpy (the rollout, with a CPU policy). A plain
``SyncVectorEnv`` is stepped env by env here (``SubEnvStepper``), so that a caller can leave
out the envs whose results it no longer needs.
"""

from __future__ import annotations

import difflib
import os
import traceback
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv, VectorEnv
from torch import Tensor

from neurorun.common.errors import one_line
from neurorun.envs.base import (
    ActionAdapter,
    EnvStepError,
    TorchVecEnv,
    UnknownEnvError,
    check_observation_space,
    own_episode_limit,
    policy_action_space,
)

VECTORIZATIONS = ("auto", "native", "sync", "async")


def check_vectorization(vectorization: Any) -> str:
    """``problem.vectorization``: one of VECTORIZATIONS (the config checks ask this too)."""
    if vectorization not in VECTORIZATIONS:
        raise ValueError(f"vectorization={vectorization!r}: expected one of "
                         f"{', '.join(VECTORIZATIONS)}. Fix: problem.vectorization=auto.")
    return vectorization


INSTALL_GL = "install EGL (a GPU driver or libegl1) or OSMesa (libosmesa6)"


class MujocoGLError(RuntimeError):
    """MuJoCo could not load the OpenGL backend that MUJOCO_GL names."""


def mujoco_gl_fix(gl: str) -> str:
    """The fix when MuJoCo cannot load MUJOCO_GL=``gl``: install it, unset it, or name one."""
    if gl in ("egl", "osmesa"):  # a backend that is not installed here
        return f"{INSTALL_GL}, or unset MUJOCO_GL"
    return "unset MUJOCO_GL, or set it to egl or osmesa"


def _opengl_failed(error: BaseException) -> bool:
    """Whether MuJoCo's OpenGL set-up raised ``error`` (a MUJOCO_GL it refused, or PyOpenGL
    without the library it names)."""
    frames = traceback.extract_tb(error.__traceback__)
    package = f"{os.sep}OpenGL{os.sep}"  # PyOpenGL's files
    return "MUJOCO_GL" in str(error) or any(package in frame.filename for frame in frames)


def check_gym_vectorization(env_id: str, vectorization: Any) -> None:
    """``problem.vectorization`` for ``env_id``: one of VECTORIZATIONS, and ``native`` only
    where gymnasium has the env's own vector env (the config checks ask this too)."""
    check_vectorization(vectorization)
    if vectorization == "native" and gym_env_spec(env_id).vector_entry_point is None:
        raise ValueError(
            f"problem.vectorization=native: gymnasium has no vector env of its own for "
            f"{env_id!r} (its spec has no vector_entry_point). Fix: problem.vectorization=auto "
            "(or sync, async).")


def gym_env_spec(env_id: str) -> gym.envs.registration.EnvSpec:
    """The registered spec of ``env_id``, or UnknownEnvError naming the closest ids.

    For MuJoCo envs it also imports MuJoCo (which loads the OpenGL backend MUJOCO_GL names:
    MujocoGLError where that fails) and routes its warnings through Python's (see below)."""
    try:
        spec = gym.spec(env_id)
    except gym.error.Error as error:
        close = difflib.get_close_matches(env_id, list(gym.registry), n=5, cutoff=0.5)
        hint = f"; closest registered ids: {', '.join(close)}" if close else ""
        raise UnknownEnvError(
            f"unknown gymnasium env id {env_id!r}{hint}. Fix: a registered id (see "
            "gymnasium.registry; `neurorun --help` lists the presets), 'brax::name' for brax, "
            "or 'pkg.module:factory'"
        ) from error
    if "mujoco" in str(spec.entry_point):
        try:
            route_mujoco_warnings()
        except Exception as error:
            gl = os.environ.get("MUJOCO_GL")
            if gl is None or not _opengl_failed(error):
                raise
            raise MujocoGLError(
                f"MuJoCo could not load MUJOCO_GL={gl!r} for gymnasium's {env_id} "
                f"({one_line(error, with_type=True)}). Fix: {mujoco_gl_fix(gl)}") from error
    return spec


def route_mujoco_warnings() -> None:
    """MuJoCo's own handler prints every warning to stdout and appends it to MUJOCO_LOG.TXT in
    the working directory: with MuJoCo 4.0, one 'settotalmass is deprecated' line per env
    built (256 at popsize 256). Raised as a Python RuntimeWarning instead, each distinct
    message shows once and no file is written. Leaves a handler someone else set alone."""
    import mujoco

    if mujoco.get_mju_user_warning() is None:
        mujoco.set_mju_user_warning(_mujoco_warning)


def _mujoco_warning(message: str) -> None:
    warnings.warn(f"MuJoCo: {message}", RuntimeWarning, stacklevel=2)


def limited_episode_steps(registered: int | None, episode_length: int | None) -> int | None:
    """An episode ends at the env's own limit or after ``episode_length`` steps, the earlier."""
    if episode_length is None:
        return registered
    return episode_length if registered is None else min(registered, episode_length)


def make_gym_vector_env(
    env_id: str,
    num_envs: int,
    vectorization: str = "auto",
    episode_length: int | None = None,
    **env_config: Any,
) -> VectorEnv:
    """``gym.make_vec`` with neurorun's choice of vectorization and episode limit."""
    spec = gym_env_spec(env_id)
    check_gym_vectorization(env_id, vectorization)
    native = spec.vector_entry_point is not None
    mode = {"auto": "vector_entry_point" if native else "sync", "native": "vector_entry_point"}
    limit = limited_episode_steps(own_episode_limit(env_config, spec.max_episode_steps),
                                  episode_length)
    if limit is not None:  # the earlier of the env's own limit and episode_length
        env_config = {**env_config, "max_episode_steps": int(limit)}
    return gym.make_vec(
        env_id, num_envs=num_envs, vectorization_mode=mode.get(vectorization, vectorization),
        **env_config,
    )


def failing_env_index(error: BaseException) -> int | None:
    """Which sub-env raised, read from the traceback of gymnasium's Sync/AsyncVectorEnv."""
    tb = error.__traceback__
    index = None
    while tb is not None:
        frame_locals = tb.tb_frame.f_locals
        owner = frame_locals.get("self")
        if isinstance(owner, SyncVectorEnv) and isinstance(frame_locals.get("i"), int):
            index = frame_locals["i"]
        elif isinstance(owner, AsyncVectorEnv) and isinstance(frame_locals.get("index"), int):
            index = frame_locals["index"]
        tb = tb.tb_next
    return index


class SubEnvStepper:
    """Steps the chosen sub-envs of a gymnasium ``SyncVectorEnv`` with next-step autoreset.

    The calls on each stepped env are those ``SyncVectorEnv.step`` makes (``step``, or
    ``reset()`` on the step after ``done``); an env left out is not touched and reports its
    last observation, reward 0 and ``done`` False, and resumes where it was when stepped again.
    ``next_seeds[i]`` (-1: none) seeds env i's next autoreset.
    """

    def __init__(self, env: SyncVectorEnv, spec: str):
        self.envs = env.envs
        self.spec = spec
        self.num_envs = len(self.envs)
        self.obs = np.empty(0)  # (num_envs, *obs_shape) last observations, in the space's dtype
        self.needs_reset = np.zeros(self.num_envs, dtype=bool)
        self.next_seeds = np.full(self.num_envs, -1, dtype=np.int64)

    def reset(self, obs: np.ndarray) -> None:
        """Start from the observations of a reset of the whole vector env."""
        self.obs = np.array(obs)
        self.needs_reset = np.zeros(self.num_envs, dtype=bool)
        self.next_seeds[:] = -1

    def step(
        self, actions: np.ndarray, active: np.ndarray | None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Obs (num_envs, *obs_shape), reward and done after stepping the ``active`` envs."""
        reward = np.zeros(self.num_envs, dtype=np.float64)
        done = np.zeros(self.num_envs, dtype=bool)
        indices = range(self.num_envs) if active is None else np.flatnonzero(active).tolist()
        obs, needs_reset = self.obs, self.needs_reset
        for i in indices:
            try:
                if needs_reset[i]:
                    seed = int(self.next_seeds[i])
                    obs[i], _ = self.envs[i].reset(seed=None if seed < 0 else seed)
                    self.next_seeds[i] = -1
                else:
                    obs[i], reward[i], terminated, truncated, _ = self.envs[i].step(actions[i])
                    done[i] = terminated or truncated
            except Exception as error:
                raise EnvStepError(
                    f"env {self.spec!r}: sub-env {i} raised {type(error).__name__}: {error}", i
                ) from error
        # envs left out keep their pending autoreset
        self.needs_reset = done.copy() if active is None else done | (needs_reset & ~active)
        return obs, reward, done


class GymVecEnv(TorchVecEnv):
    """Wraps a gymnasium VectorEnv that uses next-step autoreset (gymnasium's default)."""

    def __init__(self, env: VectorEnv, spec: str, device: torch.device | str = "cpu"):
        mode = env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
        if mode not in (AutoresetMode.NEXT_STEP, AutoresetMode.NEXT_STEP.value):
            env.close()
            raise ValueError(
                f"env {spec!r} uses autoreset_mode={mode}; neurorun counts episodes with "
                "gymnasium's default next-step autoreset: create the vector env with "
                "autoreset_mode=gymnasium.vector.AutoresetMode.NEXT_STEP"
            )
        self.env = env
        self.spec = spec
        # a user's subclass may change how stepping works: only plain ones are stepped here
        self._stepper = SubEnvStepper(env, spec) if type(env) is SyncVectorEnv else None
        self.skips_inactive = self.seeds_episodes = self._stepper is not None
        self.ends_episodes = self._stepper is not None
        # Sync/Async vector envs seed env i with seed[i]; other vector envs take one seed
        self._seeds_per_env = isinstance(env, SyncVectorEnv | AsyncVectorEnv)
        self.device = torch.device(device)
        self._on_cpu = self.device.type == "cpu"
        self.host_arrays = True  # the simulators work in numpy, whatever the device
        self.num_envs = int(env.num_envs)
        try:
            self.single_observation_space = check_observation_space(
                env.single_observation_space, spec)
            self.single_action_space = policy_action_space(env.single_action_space, spec)
        except TypeError:
            env.close()
            raise
        self.env_action_space = env.single_action_space
        self._adapt = ActionAdapter(env.single_action_space)
        dtype = getattr(env.single_action_space, "dtype", None)
        self._action_dtype = np.dtype(dtype) if dtype is not None else None

    def _tensor(self, array: np.ndarray) -> Tensor:
        result = torch.from_numpy(array)
        return result if self._on_cpu else result.to(self.device)

    def _obs(self, obs: np.ndarray) -> np.ndarray:
        if obs.shape[1:] != self.single_observation_space.shape:  # a user's env, or its space
            raise self._wrong_shape(obs.shape[1:])
        # a copy (np.array copies): the caller may keep results across steps, and a user's env
        # may reuse its buffers
        return np.array(obs.reshape(self.num_envs, -1), dtype=np.float32)

    def _wrong_shape(self, got: tuple[int, ...] | None) -> ValueError:
        shown = "another shape" if got is None else f"shape {got}"
        return ValueError(
            f"env {self.spec!r}: observations of {shown}, but its observation_space says "
            f"{self.single_observation_space.shape}. Fix: make the env's observations match "
            "its observation_space (or the space match them).")

    def _reset_shape(self, seed: Any) -> tuple[int, ...] | None:
        """The shape of a sub-env's own reset observation (None: it has none to ask)."""
        envs = getattr(self.env, "envs", None)
        try:
            return np.shape(envs[0].reset(seed=seed)[0]) if envs else None
        except Exception:  # the sub-env fails by itself: the original error stands
            return None

    def seed_next_episodes(self, envs: np.ndarray, seeds: np.ndarray) -> None:
        if self._stepper is not None:
            self._stepper.next_seeds[envs] = seeds

    def end_episodes(self, envs: np.ndarray) -> None:
        if self._stepper is None:  # a native or async vector env: refused (raises)
            super().end_episodes(envs)
        self._stepper.needs_reset[envs] = True

    def reset_arrays(self, seed: int | Sequence[int] | None = None) -> np.ndarray:
        if seed is not None and not np.isscalar(seed):
            seed = [int(s) for s in seed] if self._seeds_per_env else int(seed[0])
        try:
            obs, _ = self.env.reset(seed=seed)
        except ValueError as error:  # gymnasium stacks the sub-envs' observations by the space
            first = seed[0] if isinstance(seed, list) else seed
            got = self._reset_shape(first)
            if got is None or got == self.single_observation_space.shape:
                raise
            raise self._wrong_shape(got) from error
        if self._stepper is not None:
            self._stepper.reset(obs)
        return self._obs(obs)

    def step_arrays(
        self, actions: np.ndarray, active: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``active`` (num_envs,) bool: the envs to step (None: all); with ``skips_inactive``
        the others are not simulated, else the mask is ignored."""
        env_actions = self._adapt(actions)
        if self._action_dtype is not None and env_actions.dtype != self._action_dtype:
            env_actions = env_actions.astype(self._action_dtype)
        if self._stepper is not None:
            obs, reward, done = self._stepper.step(env_actions, active)
            return self._obs(obs), reward, done
        try:
            obs, reward, terminated, truncated, _ = self.env.step(env_actions)
        except Exception as error:
            index = failing_env_index(error)
            where = f"sub-env {index}" if index is not None else "a sub-env"
            raise EnvStepError(
                f"env {self.spec!r}: {where} raised {type(error).__name__}: {error}", index
            ) from error
        return self._obs(obs), np.array(reward), np.logical_or(terminated, truncated)

    def reset(self, seed: int | Sequence[int] | None = None) -> Tensor:
        return self._tensor(self.reset_arrays(seed))

    def step(
        self, actions: Tensor, active: np.ndarray | None = None,
    ) -> tuple[Tensor, Tensor, Tensor]:
        if actions.requires_grad:
            actions = actions.detach()
        host_actions = actions.numpy() if self._on_cpu else actions.cpu().numpy()
        arrays = self.step_arrays(host_actions, active)
        return tuple(self._tensor(array) for array in arrays)  # type: ignore[return-value]

    def close(self) -> None:
        self.env.close()


def gym_spaces(env_id: str, **env_config: Any) -> tuple[gym.Space, gym.Space]:
    """Observation and action space of one env, built and closed again."""
    gym_env_spec(env_id)
    own_episode_limit(env_config, None)  # a count where given
    try:
        env = gym.make(env_id, **env_config)
    except TypeError as error:  # a keyword its constructor does not take
        if not env_config or "keyword argument" not in str(error):
            raise
        raise TypeError(f"{one_line(error)}. Fix: only keyword arguments {env_id}'s constructor "
                        "takes in env.env_config, or leave them out.") from error
    try:
        return env.observation_space, env.action_space
    finally:
        env.close()


def make_factory_env(
    factory: Callable[..., VectorEnv], spec: str, num_envs: int, device: torch.device | str,
    **env_config: Any,
) -> GymVecEnv:
    """A user's ``factory(num_envs=..., **env_config) -> VectorEnv``, wrapped."""
    env = factory(num_envs=num_envs, **env_config)
    if not isinstance(env, VectorEnv):
        raise TypeError(
            f"env factory {spec!r} returned {type(env).__name__}; expected a "
            "gymnasium.vector.VectorEnv with num_envs environments"
        )
    if env.num_envs != num_envs:
        env.close()
        raise ValueError(f"env factory {spec!r} made {env.num_envs} envs; asked for {num_envs}")
    return GymVecEnv(env, spec, device)
