"""Frames to files: GIF through Pillow, MP4 through imageio + imageio-ffmpeg (the optional
extra `neurorun[video]`), and an offscreen OpenGL backend for MuJoCo."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from neurorun.tools.common import ToolError, write_output

VIDEO_SUFFIXES = (".gif", ".mp4")
_GL_PROBE = "import mujoco; c = mujoco.GLContext(16, 16); c.make_current(); c.free()"


def check_video_writer(path: Path) -> None:
    """Fail before rendering when `path`'s format cannot be written here."""
    if path.suffix not in VIDEO_SUFFIXES:
        raise ToolError(f"--out {str(path)!r}: expected a .gif or .mp4 file (.html for brax)")
    if path.suffix == ".mp4" and importlib.util.find_spec("imageio_ffmpeg") is None:
        raise ToolError("writing .mp4 needs imageio-ffmpeg: pip install 'neurorun[video]' "
                        "(or pip install imageio-ffmpeg), or write a .gif instead")


def write_video(frames: list[np.ndarray], path: Path, fps: float) -> Path:
    """Write (H, W, 3) uint8 `frames` as a GIF or MP4 at `fps` frames per second."""
    check_video_writer(path)
    if not frames:
        raise ToolError("no frames to write: the env rendered nothing")
    if path.suffix == ".gif":
        return write_output(path, lambda tmp: _write_gif(frames, tmp, fps), "GIF")
    return write_output(path, lambda tmp: _write_mp4(frames, tmp, fps), "MP4 video")


def _write_gif(frames: list[np.ndarray], path: Path, fps: float) -> None:
    from PIL import Image

    images = [Image.fromarray(np.asarray(frame, dtype=np.uint8)) for frame in frames]
    # Pillow stores durations in milliseconds (GIF itself in hundredths of a second).
    images[0].save(path, format="GIF", save_all=True, append_images=images[1:],
                   duration=round(1000 / fps), loop=0)


def _write_mp4(frames: list[np.ndarray], path: Path, fps: float) -> None:
    import imageio.v2 as imageio

    # imageio picks the container from the suffix: write `<tmp>.mp4`, then move it to `path`.
    named = path.with_name(path.name + ".mp4")
    try:
        with imageio.get_writer(named, format="FFMPEG", mode="I", fps=fps, codec="libx264",
                                macro_block_size=2) as writer:
            for frame in frames:
                writer.append_data(np.asarray(frame, dtype=np.uint8))
        os.replace(named, path)
    finally:
        named.unlink(missing_ok=True)


def is_mujoco_env(name: str) -> bool:
    import gymnasium as gym

    try:
        entry_point = gym.spec(name).entry_point
    except Exception:
        return False
    return "mujoco" in str(entry_point)


def prepare_mujoco_gl() -> str | None:
    """Pick MUJOCO_GL before mujoco is imported: the user's choice, else egl, else osmesa.

    Returns the backend in use, or None when neither works (or mujoco was imported first)."""
    if "MUJOCO_GL" in os.environ or "mujoco" in sys.modules:
        return os.environ.get("MUJOCO_GL")
    for backend in ("egl", "osmesa"):
        try:
            probe = subprocess.run([sys.executable, "-c", _GL_PROBE], capture_output=True,
                                   timeout=120, env={**os.environ, "MUJOCO_GL": backend})
        except (OSError, subprocess.TimeoutExpired):
            continue
        if probe.returncode == 0:
            os.environ["MUJOCO_GL"] = backend
            return backend
    return None


def no_renderer_error(error: Exception) -> ToolError:
    """The message for a MuJoCo render that failed, naming what to install."""
    return ToolError(f"MuJoCo could not render offscreen ({type(error).__name__}: {error}); "
                     "tried MUJOCO_GL=egl, then osmesa: install EGL (a GPU driver or libegl1) "
                     "or OSMesa (libosmesa6), or set MUJOCO_GL yourself")
