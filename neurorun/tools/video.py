"""Frames to files for neurorun-render: GIF through Pillow, MP4 through imageio +
imageio-ffmpeg (the optional extra `neurorun[video]`), the encoders a run's videos use."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from neurorun.common.errors import one_line
from neurorun.common.extras import require
from neurorun.envs.gym_env import INSTALL_GL, mujoco_gl_fix
from neurorun.loggers.videos import ENCODERS
from neurorun.problems.playback import users_mujoco_gl
from neurorun.tools.common import ToolError, out_format, write_output

VIDEO_SUFFIXES = tuple(ENCODERS)


def check_video_writer(path: Path) -> None:
    """Fail before rendering when `path`'s format cannot be written here."""
    if out_format(path) not in VIDEO_SUFFIXES:
        raise ToolError(f"--out {str(path)!r}: expected a .gif or .mp4 file (.html for brax)")
    if out_format(path) == ".mp4":  # run_tool says a missing extra in one line
        require("video", "--out .mp4", otherwise="write a .gif")


def write_video(frames: list[np.ndarray], path: Path, fps: float) -> Path:
    """Write (H, W, 3) uint8 `frames` as a GIF or MP4 at `fps` frames per second."""
    check_video_writer(path)
    if not frames:
        raise ToolError("no frames to write: the env rendered nothing")
    kind = out_format(path)
    what = "GIF" if kind == ".gif" else "MP4 video"
    return write_output(path, lambda tmp: ENCODERS[kind](frames, tmp, fps), what)


def users_gl_error(failed: str) -> ToolError | None:
    """``failed`` blamed on the user's MUJOCO_GL, with the fix, where the environment set it."""
    users = users_mujoco_gl()
    if users is None:
        return None
    return ToolError(f"{failed} with MUJOCO_GL={users!r} from the environment. "
                     f"Fix: {mujoco_gl_fix(users)}")


def no_renderer_error(error: Exception) -> ToolError:
    """The message for a MuJoCo render that failed, naming what to install (or the user's
    MUJOCO_GL, where that is what failed)."""
    failed = f"MuJoCo could not render offscreen ({one_line(error, with_type=True)})"
    return users_gl_error(failed) or ToolError(
        f"{failed}; tried MUJOCO_GL=egl, then osmesa: {INSTALL_GL}, or set MUJOCO_GL yourself")
