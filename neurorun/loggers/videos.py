"""A run's videos (``logger.video_every``): the center's first test episode, played as the
center evaluation plays it (its seed, the observation statistics it was evaluated with, no
action noise), every ``video_every`` generations and at the end, written to
``<run>/videos/gen_<n>.<gif|mp4>`` and handed to the trackers (``Logger.video``).

A video that cannot be made (no OpenGL for MuJoCo, an env neurorun cannot draw, a full disk) is
one warning, and the run goes on without videos. Making one changes no state of the run nor any
random stream: a resumed run equals one that made none. Frames go to the file as they are
drawn (a GIF keeps one byte a pixel of each distinct frame until it is written, an MP4 none).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from neurorun.common.atomic import atomic_write, is_disk_full
from neurorun.common.errors import one_line
from neurorun.common.extras import require
from neurorun.common.settings import setting
from neurorun.record.layout import video_path

# problems/playback.py (gymnasium and the envs) is imported where a video is made: loading the
# loggers does not load the envs
if TYPE_CHECKING:
    from neurorun.loggers.base import Logger
    from neurorun.problems import Problem
    from neurorun.problems.playback import Player

log = logging.getLogger(__name__)

VIDEO_FORMATS = ("gif", "mp4")  # logger.video_format
FPS = 25.0  # frames per second of a run's videos: 40 ms a frame, exact in a GIF's hundredths


def _check_format(fmt: Any) -> None:
    if fmt not in VIDEO_FORMATS:
        raise ValueError(f"video_format={fmt!r}: expected gif or mp4. Fix: video_format=gif "
                         "(needs only Pillow)")


@dataclass(frozen=True)
class VideoSettings:
    """``logger.video_every`` and ``logger.video_format``."""

    video_every: int | None = setting(None, ge=0)  # None or 0: no videos
    video_format: str = setting("gif", rule=_check_format)

    def check_encoder(self) -> None:
        """MissingExtraError (one line) where MP4 videos are asked for and cannot be written
        here."""
        if self.video_format == "mp4" and self.video_every:
            require("video", "logger.video_format=mp4", otherwise="logger.video_format=gif")


def write_gif(frames: Iterable[np.ndarray], path: Path, fps: float) -> None:
    """(H, W, 3) uint8 ``frames`` (at least one) as a looping GIF at ``fps``, each frame with
    its own palette of up to 256 colours (Pillow's fast octree, a fraction of the median cut's
    time that Pillow picks by itself: docs/trackers.md)."""
    from PIL import Image

    images = (Image.fromarray(np.asarray(frame, dtype=np.uint8)).quantize(
        method=Image.Quantize.FASTOCTREE) for frame in frames)
    # Pillow stores durations in milliseconds (GIF itself in hundredths of a second).
    next(images).save(path, format="GIF", save_all=True, append_images=images,
                      duration=round(1000 / fps), loop=0)


def write_mp4(frames: Iterable[np.ndarray], path: Path, fps: float) -> None:
    """(H, W, 3) uint8 ``frames`` as an H.264 MP4 at ``fps`` (imageio-ffmpeg)."""
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


ENCODERS: dict[str, Callable[[Iterable[np.ndarray], Path, float], None]] = {
    ".gif": write_gif, ".mp4": write_mp4}


class RunVideos:
    """When a run makes its videos and how (``due``, ``record``); off when ``every`` is 0."""

    def __init__(self, run_dir: Path, every: int, fmt: str = "gif"):
        self.run_dir, self.every, self.suffix = Path(run_dir), int(every), f".{fmt}"
        self.player: Player | None = None  # made by the first video
        self.made = 0  # videos written by this process

    @classmethod
    def from_settings(cls, settings: VideoSettings, run_dir: Path, spec: str) -> RunVideos:
        """The videos ``logger.*`` asks for; picks MuJoCo's OpenGL backend first where the env
        draws with MuJoCo (it must be chosen before mujoco is imported)."""
        from neurorun.problems.playback import draws_with_mujoco, prepare_mujoco_gl

        videos = cls(run_dir, settings.video_every or 0, settings.video_format)
        if videos.every and draws_with_mujoco(spec):
            prepare_mujoco_gl()
        return videos

    def due(self, generation: int, *, last: bool) -> bool:
        """Whether generation ``generation`` (``last``: the run's last) gets a video."""
        return self.every > 0 and (generation % self.every == 0 or last)

    def record(self, generation: int, problem: Problem, center: Any, seed: int,
               logger: Logger) -> Path | None:
        """Write the video of ``center``'s test episode seeded ``seed`` on ``problem``'s env
        and hand it to ``logger``; None (one warning, no more videos) where it fails."""
        from neurorun.problems.playback import Episode, make_player

        path = video_path(self.run_dir, generation, self.suffix)
        episode = Episode(seed, 0.0, 0)
        started = time.perf_counter()
        try:
            if self.player is None:
                options = problem.env_options
                self.player = make_player(options.spec, dict(options.config),
                                          options.episode_length)
            frames = self.player.frames(problem.to_policy(center).eval(), seed, episode)
            atomic_write(path, lambda temporary: ENCODERS[self.suffix](frames, temporary, FPS))
        except Exception as error:
            self._give_up(generation, error, problem.env_options.spec)
            return None
        (log.debug if self.made else log.info)(
            "video of generation %d: %s (return %.6g, %d steps, %.1f s)", generation, path,
            episode.episode_return, episode.length, time.perf_counter() - started)
        self.made += 1
        logger.video(generation, path)
        return path

    def _give_up(self, generation: int, error: Exception, spec: str) -> None:
        """The one warning; no more videos in this run."""
        from neurorun.problems.playback import draws_with_mujoco

        cause = one_line(error, with_type=True)
        fix = ("free space on its disk, or " if is_disk_full(error) else
               "give MuJoCo offscreen OpenGL (MUJOCO_GL=egl: a GPU driver or libegl1; "
               "MUJOCO_GL=osmesa: libosmesa6), or " if draws_with_mujoco(spec) else "")
        log.warning("logger.video_every=%d: no video of generation %d (%s); the run goes on "
                    "without videos. Fix: %sset logger.video_every=null", self.every,
                    generation, cause, fix)
        self.every = 0
        self.close()

    def close(self) -> None:
        if self.player is not None:
            self.player.close()
            self.player = None
