"""One seeded episode of a policy with a frame after its reset and after every step: what
neurorun-render draws and what a run's videos (``logger.video_every``) show.

A gymnasium id plays on gymnasium's env of the id (``render_mode="rgb_array"``), EnvPool's ids
too: EnvPool's own renderer needs an OpenGL context made beforehand, and without one its MuJoCo
ended the whole process (EGL, no GPU). The episode starts from gymnasium's reset with the
seed, so on EnvPool it is not the one the run's test episodes played (EnvPool draws its initial
noise with its own generator). A brax or Playground env plays on the batched env a run steps
(``batched_jax_env``), one env started from the episode's key (``episode_keys``, as the run's
test episodes are), drawn by MuJoCo's renderer from each step's positions. MuJoCo draws
offscreen through the OpenGL backend ``prepare_mujoco_gl`` picks, before mujoco is imported.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from neurorun.envs import backend_of, batched_jax_env, parse_spec
from neurorun.envs.jax_env import episode_keys, use_compilation_cache

FRAME_HEIGHT, FRAME_WIDTH = 240, 320  # MuJoCo frames of brax, Playground and a run's videos
_GL_PROBE = "import mujoco; c = mujoco.GLContext(16, 16); c.make_current(); c.free()"
_picked: str | None = None  # the MUJOCO_GL prepare_mujoco_gl set (not the user's)


@dataclass
class Episode:
    seed: int
    episode_return: float
    length: int
    frames: list[np.ndarray] = field(default_factory=list)  # (H, W, 3) uint8 each


def prepare_mujoco_gl() -> str | None:
    """Pick MUJOCO_GL before mujoco is imported: the user's choice, else egl, else osmesa.

    Returns the backend in use, or None when neither works (or mujoco was imported first)."""
    global _picked
    if "MUJOCO_GL" in os.environ or "mujoco" in sys.modules:
        return os.environ.get("MUJOCO_GL")
    for backend in ("egl", "osmesa"):
        try:
            probe = subprocess.run([sys.executable, "-c", _GL_PROBE], capture_output=True,
                                   timeout=120, env={**os.environ, "MUJOCO_GL": backend})
        except (OSError, subprocess.TimeoutExpired):
            continue
        if probe.returncode == 0:
            os.environ["MUJOCO_GL"] = _picked = backend
            return backend
    return None


def users_mujoco_gl() -> str | None:
    """MUJOCO_GL where the environment set it, not ``prepare_mujoco_gl``."""
    gl = os.environ.get("MUJOCO_GL")
    return None if gl in (None, _picked) else gl


def is_mujoco_env(name: str) -> bool:
    """Whether gymnasium's env ``name`` is a MuJoCo one (drawn through OpenGL)."""
    import gymnasium as gym

    try:
        entry_point = gym.spec(name).entry_point
    except Exception:
        return False
    return "mujoco" in str(entry_point)


class MujocoDrawing:
    """MuJoCo's renderer of one model, FRAME_WIDTH x FRAME_HEIGHT, without multisampling,
    shadows, reflections and skybox, reading no depth: each of them multiplies the time of a
    frame on software OpenGL (EGL's llvmpipe on a machine without a GPU; docs/trackers.md)."""

    def __init__(self, model: Any, camera: Any):
        import mujoco

        samples = model.vis.quality.offsamples  # read as the renderer's context is made
        model.vis.quality.offsamples = 0
        try:
            self.renderer = mujoco.Renderer(model, FRAME_HEIGHT, FRAME_WIDTH)
        finally:
            model.vis.quality.offsamples = samples
        for flag in ("mjRND_SHADOW", "mjRND_REFLECTION", "mjRND_SKYBOX"):
            self.renderer.scene.flags[getattr(mujoco.mjtRndFlag, flag)] = 0
        self.camera = camera  # a camera's index (-1: the free camera) or an MjvCamera

    def __call__(self, data: Any) -> np.ndarray:
        """The frame of ``data`` (an MjData whose positions are set): (H, W, 3) uint8."""
        self.renderer.update_scene(data, camera=self.camera)
        return self.renderer.render()

    def close(self) -> None:
        self.renderer.close()


class PositionsDrawing:
    """A brax or Playground model drawn at given positions, from its first camera (brax's
    humanoid and ant, CheetahRun: one that follows the body), else MuJoCo's free camera, or
    from ``camera``."""

    def __init__(self, model: Any, camera: int | None = None):
        import mujoco

        if camera is None:
            camera = 0 if model.ncam else -1
        self.model, self.data = model, mujoco.MjData(model)
        self.drawing = MujocoDrawing(model, camera)

    def __call__(self, qpos: Any, mocap: tuple[Any, Any] | None = None) -> np.ndarray:
        """The frame of joint positions ``qpos`` (and the mocap bodies' positions and
        orientations, where the model has them)."""
        import mujoco

        self.data.qpos[:] = np.asarray(qpos)
        if mocap is not None:
            self.data.mocap_pos[:], self.data.mocap_quat[:] = map(np.asarray, mocap)
        mujoco.mj_forward(self.model, self.data)
        return self.drawing(self.data)

    def close(self) -> None:
        self.drawing.close()


def offscreen_pygame() -> None:
    """pygame (gymnasium's classic-control and Box2D envs) draws offscreen: no audio device, no
    window (SDL's video start-up printed "XDG_RUNTIME_DIR is invalid or not set" where no
    desktop session runs)."""
    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")


def gym_frames(env: Any, policy: Any, seed: int, limit: int | None, episode: Episode,
               draw: Callable[[], np.ndarray] | None = None) -> Iterator[np.ndarray]:
    """The frames of one episode of ``policy`` (``act(obs)``) on the gymnasium ``env`` from
    ``reset(seed=seed)``, cut after ``limit`` steps (None: the env's own end), each from
    ``draw()`` (None: ``env.render()``, render_mode "rgb_array"); ``episode``'s return and
    length count the steps as they are played."""
    draw = draw or env.render
    obs, _ = env.reset(seed=seed)
    reset_policy(policy)
    yield draw()
    done = False
    while not done:
        obs, reward, terminated, truncated, _ = env.step(policy.act(obs))
        episode.episode_return += float(reward)
        episode.length += 1
        done = terminated or truncated or (limit is not None and episode.length >= limit)
        yield draw()


def reset_policy(policy: Any) -> None:
    reset = getattr(policy, "reset", None)
    if callable(reset):
        reset()


class Player:
    """Plays seeded episodes of policies on one env, made once (and its renderer, its
    compiled steps); ``make_player`` picks the kind."""

    def frames(self, policy: Any, seed: int, episode: Episode) -> Iterator[np.ndarray]:
        raise NotImplementedError

    def close(self) -> None:
        """Release the env and its renderer."""


class GymPlayer(Player):
    """gymnasium's env of a gymnasium (or EnvPool) id; a MuJoCo one drawn by MujocoDrawing
    from gymnasium's camera (its viewer made by one render of its own)."""

    def __init__(self, name: str, env_config: dict[str, Any], limit: int | None):
        import gymnasium as gym

        self.limit = limit
        offscreen_pygame()
        self.env = gym.make(name, render_mode="rgb_array", **env_config)
        self.drawing: MujocoDrawing | None = None
        if is_mujoco_env(name):
            self.env.reset()
            self.env.render()
            env = self.env.unwrapped
            self.drawing = MujocoDrawing(env.model, env.mujoco_renderer.viewer.cam)

    def frames(self, policy: Any, seed: int, episode: Episode) -> Iterator[np.ndarray]:
        drawing = self.drawing
        draw = None if drawing is None else lambda: drawing(self.env.unwrapped.data)
        return gym_frames(self.env, policy, seed, self.limit, episode, draw)

    def close(self) -> None:
        if self.drawing is not None:
            self.drawing.close()
        self.env.close()


class JaxPlayer(Player):
    """A brax or Playground env: one env of the run's batched env, its reset and step jitted
    once for the player, each state's positions drawn by ``PositionsDrawing``."""

    def __init__(self, spec: str, env_config: dict[str, Any], episode_length: int | None):
        import jax

        env = batched_jax_env(spec, episode_length, **env_config)
        use_compilation_cache()  # the next run loads the two programs (compiled on first use)
        self._reset, self._step = jax.jit(env.reset), jax.jit(env.step)
        model = getattr(env, "mj_model", None)  # Playground's; brax's is its system's
        if model is None:
            model = env.sys.mj_model
        self.drawing = PositionsDrawing(model)

    def frames(self, policy: Any, seed: int, episode: Episode) -> Iterator[np.ndarray]:
        import jax.numpy as jnp

        state = self._reset(jnp.asarray(episode_keys([seed])))
        reset_policy(policy)
        yield self._draw(state)
        while True:
            action = np.asarray(policy.act(np.array(state.obs[0])), dtype=np.float32)
            state = self._step(state, jnp.clip(jnp.asarray(action[None]), -1.0, 1.0))
            episode.episode_return += float(state.reward[0])
            episode.length += 1
            yield self._draw(state)
            if float(state.done[0]) > 0:
                return

    def _draw(self, state: Any) -> np.ndarray:
        data = getattr(state, "data", None)  # Playground's mjx.Data; brax's pipeline state
        if data is None:
            data = state.pipeline_state
        mocap = ((data.mocap_pos[0], data.mocap_quat[0]) if self.drawing.model.nmocap
                 else None)
        return self.drawing(data.qpos[0] if hasattr(data, "qpos") else data.q[0], mocap)

    def close(self) -> None:
        self.drawing.close()


def draws_with_mujoco(spec: str) -> bool:
    """Whether env ``spec``'s frames are drawn by MuJoCo (through OpenGL)."""
    backend = backend_of(spec)
    return backend.is_jax or (backend.gymnasium_id and is_mujoco_env(parse_spec(spec)[1]))


def make_player(spec: str, env_config: dict[str, Any], episode_length: int | None) -> Player:
    """The player of env ``spec`` with the run's ``env_config``, its episodes cut after
    ``episode_length`` steps (None: the env's own end).

    Raises:
        ValueError: a factory's env (``pkg.module:factory``), which neurorun cannot draw.
    """
    backend = backend_of(spec)
    if backend.is_jax:
        return JaxPlayer(spec, env_config, episode_length)
    if backend.gymnasium_id:
        return GymPlayer(parse_spec(spec)[1], env_config, episode_length)
    raise ValueError(f"env {spec!r} is made by a factory, whose envs neurorun cannot draw")
