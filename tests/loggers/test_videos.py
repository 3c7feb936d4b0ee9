"""A run's videos (logger.video_every): the center's first test episode every N
generations and at the end, as GIFs in <run>/videos/ and in each tracker; a video that cannot
be made is one warning and the run goes on; videos change nothing a run computes."""

from __future__ import annotations

import csv
import errno
import json
import logging
import os
import random
import re
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from neurorun.cli.app import compose_config
from neurorun.common import extras
from neurorun.common.errors import ConfigError
from neurorun.config.resume import load_run_config
from neurorun.loggers import LOGGERS, Logger
from neurorun.loggers import videos as run_videos
from neurorun.loggers.bounded import Bounded
from neurorun.loggers.videos import RunVideos
from neurorun.loop.runner import Runner, run
from neurorun.loop.signals import RunInterrupted
from neurorun.problems import make_problem
from neurorun.problems.playback import GymPlayer

from .test_trackers import tensorboard_events, wandb_records

FRAME_MS = 40  # a run's videos play 25 frames a second
CARTPOLE_SIZE = (600, 400)  # gymnasium's CartPole screen, width x height


@pytest.fixture(autouse=True)
def _offscreen(monkeypatch):
    """SDL and MuJoCo draw offscreen; the run's choice of MUJOCO_GL stays in this test."""
    monkeypatch.setenv("SDL_AUDIODRIVER", "dummy")
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    monkeypatch.setenv("MUJOCO_GL", os.environ.get("MUJOCO_GL", "egl"))


def config(*overrides: str):
    """CartPole's tiny run with one test episode: its center_eval is that episode's length (a
    reward of 1 a step)."""
    return compose_config(["debug=default", "logger.console.quiet=true", "eval_episodes=1",
                           *overrides])


def metrics(folder: Path) -> list[dict[str, str]]:
    with open(folder / "metrics.csv", newline="") as file:
        return list(csv.DictReader(file))


def without_time(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    return [{k: v for k, v in row.items() if k not in ("elapsed_s", "steps_per_s")}
            for row in rows]


def played_frames(path: Path) -> int:
    """The frames a GIF plays: its durations over one frame's (Pillow stores a run of identical
    frames once, their durations summed)."""
    with Image.open(path) as gif:
        total = 0
        for index in range(gif.n_frames):
            gif.seek(index)
            total += gif.info["duration"]
    assert total % FRAME_MS == 0
    return total // FRAME_MS


def test_videos_come_every_n_generations_and_at_the_end_with_a_frame_per_step(tmp_path):
    run(config("generations=5", "logger.video_every=2"), run_dir=tmp_path)
    centers = {int(r["generation"]): float(r["center_eval"]) for r in metrics(tmp_path)}
    assert sorted(p.name for p in (tmp_path / "videos").iterdir()) == [
        "gen_2.gif", "gen_4.gif", "gen_5.gif"]
    for generation in (2, 4, 5):
        path = tmp_path / "videos" / f"gen_{generation}.gif"
        with Image.open(path) as gif:
            assert gif.format == "GIF" and gif.size == CARTPOLE_SIZE
        # a frame after the reset and one after each step of the center's evaluated episode
        assert played_frames(path) == centers[generation] + 1


@pytest.mark.extras("video")
def test_mp4_videos_hold_a_frame_per_step(tmp_path):
    import imageio.v2 as imageio

    run(config("generations=2", "logger.video_every=1", "logger.video_format=mp4"),
        run_dir=tmp_path)
    centers = {int(r["generation"]): float(r["center_eval"]) for r in metrics(tmp_path)}
    assert sorted(p.name for p in (tmp_path / "videos").iterdir()) == ["gen_1.mp4", "gen_2.mp4"]
    for generation in (1, 2):
        with imageio.get_reader(tmp_path / "videos" / f"gen_{generation}.mp4",
                                format="FFMPEG") as reader:
            assert reader.count_frames() == centers[generation] + 1
            assert reader.get_meta_data()["fps"] == 1000 / FRAME_MS
            # H.264 works on even sizes: CartPole's screen is one already
            assert reader.get_data(0).shape == (CARTPOLE_SIZE[1], CARTPOLE_SIZE[0], 3)


def test_debug_video_is_the_tiny_run_with_a_video_of_its_last_generation(tmp_path):
    tiny = compose_config(["debug=default"])
    shown = compose_config(["debug=video"])
    assert shown.logger.video_every == tiny.generations == 2 and not tiny.logger.video_every
    run(compose_config(["debug=video", "logger.console.quiet=true"]), run_dir=tmp_path)
    assert [p.name for p in (tmp_path / "videos").iterdir()] == ["gen_2.gif"]


class Tracker(Logger):
    """A tracker as the trackers are built: behind the time bound, its videos recorded."""

    always_on = True  # no config section: the schema knows only the packaged loggers
    received: list[tuple[int, Path, bytes]] = []

    @classmethod
    def from_settings(cls, section, context):
        return Bounded("fake", cls, timeout_s=30, fix="none")

    def log(self, generation, status):
        pass

    def video(self, generation, path):
        self.received.append((generation, path, path.read_bytes()))


def test_each_video_is_handed_to_the_trackers_through_their_time_bound(tmp_path, monkeypatch):
    monkeypatch.setitem(LOGGERS, "fake", Tracker)
    monkeypatch.setattr(Tracker, "received", [])
    run(config("generations=3", "logger.video_every=2"), run_dir=tmp_path)
    videos = tmp_path / "videos"
    assert [(g, p) for g, p, _ in Tracker.received] == [(2, videos / "gen_2.gif"),
                                                        (3, videos / "gen_3.gif")]
    assert all(data == path.read_bytes() for _, path, data in Tracker.received)


def tracked(folder: Path, tracker: str) -> list[Path]:
    """A 2-generation run with a video of each generation, one tracker on: the videos."""
    run(config("generations=2", "logger.video_every=1", f"logger.{tracker}.enabled=true"),
        run_dir=folder)
    return [folder / "videos" / f"gen_{g}.gif" for g in (1, 2)]


@pytest.mark.extras("tensorboard")
def test_tensorboard_holds_each_gif_as_an_animated_image(tmp_path):
    videos = tracked(tmp_path, "tensorboard")
    images = [(event.step, value.image) for event in tensorboard_events(tmp_path / "tensorboard")
              for value in event.summary.value if value.tag == "video"]
    assert [step for step, _ in images] == [1, 2]
    for (_, image), path in zip(images, videos, strict=True):
        assert image.encoded_image_string == path.read_bytes()
        assert (image.width, image.height) == CARTPOLE_SIZE


@pytest.mark.extras("wandb")
def test_wandb_offline_holds_each_video_at_its_generation(tmp_path):
    videos = tracked(tmp_path, "wandb")
    (run_file,) = (tmp_path / "wandb").glob("offline-run-*/run-*.wandb")
    logged = {}
    for record in wandb_records(run_file):
        if record.WhichOneof("record_type") == "history":
            items = {i.key or "/".join(i.nested_key): json.loads(i.value_json)
                     for i in record.history.item}
            if "video/path" in items:
                logged[items["_step"]] = (items["video/_type"], items["video/path"])
    assert sorted(logged) == [1, 2]
    for generation, path in zip((1, 2), videos, strict=True):
        kind, kept = logged[generation]
        assert kind == "video-file"
        kept = run_file.parent / "files" / kept
        assert kept.read_bytes() == path.read_bytes()


@pytest.mark.extras("mlflow")
def test_mlflow_keeps_each_video_as_an_artifact(tmp_path):
    from mlflow.tracking import MlflowClient

    videos = tracked(tmp_path, "mlflow")
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    (mlflow_run,) = client.search_runs([client.get_experiment_by_name("neurorun").experiment_id])
    local = Path(client.download_artifacts(mlflow_run.info.run_id, "videos",
                                           str(tmp_path / "download")))
    assert sorted(p.name for p in local.iterdir()) == [p.name for p in videos]
    assert all((local / p.name).read_bytes() == p.read_bytes() for p in videos)


def failing(after: int):
    """GymPlayer.frames that fails after ``after`` frames (no OpenGL, a renderer that broke)."""

    def frames(self, policy, seed, episode):
        for count, frame in enumerate(original(self, policy, seed, episode)):
            if count == after:
                raise RuntimeError("no OpenGL context")
            yield frame

    original = GymPlayer.frames
    return frames


@pytest.mark.parametrize("after", [0, 3])
def test_a_renderer_that_fails_is_one_warning_and_the_run_goes_on(tmp_path, monkeypatch,
                                                                  caplog, after):
    monkeypatch.setattr(GymPlayer, "frames", failing(after))
    monkeypatch.setitem(LOGGERS, "fake", Tracker)
    monkeypatch.setattr(Tracker, "received", [])
    with caplog.at_level(logging.WARNING, logger="neurorun"):
        result = run(config("generations=4", "logger.video_every=1"), run_dir=tmp_path)
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, warnings
    assert "no video of generation 1 (RuntimeError: no OpenGL context)" in warnings[0]
    assert warnings[0].endswith("the run goes on without videos. Fix: set "
                                "logger.video_every=null")  # CartPole: pygame draws it
    assert result["generation"] == 4 and len(metrics(tmp_path)) == 4
    assert list((tmp_path / "videos").iterdir()) == []  # nothing half-written
    assert Tracker.received == []


def no_opengl(*args):
    raise RuntimeError("an OpenGL platform library has not been loaded")


def full_disk(*args):
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize(("env", "target", "fails", "fix"), [
    ("gym::InvertedPendulum-v5", "neurorun.problems.playback.make_player", no_opengl,
     "Fix: give MuJoCo offscreen OpenGL (MUJOCO_GL=egl: a GPU driver or libegl1; "
     "MUJOCO_GL=osmesa: libosmesa6), or set logger.video_every=null"),
    ("CartPole-v1", "neurorun.loggers.videos.write_gif", full_disk,
     "Fix: free space on its disk, or set logger.video_every=null"),
])
def test_the_warning_names_the_fix_of_its_cause(tmp_path, monkeypatch, caplog, env, target,
                                               fails, fix):
    monkeypatch.setattr(target, fails)
    monkeypatch.setitem(run_videos.ENCODERS, ".gif", run_videos.write_gif)  # as patched
    with caplog.at_level(logging.WARNING, logger="neurorun"):
        run(config(f"env={env}", "generations=2", "logger.video_every=1"), run_dir=tmp_path)
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warning.startswith("logger.video_every=1: no video of generation 1 (")
    assert warning.endswith(fix)


def test_an_env_neurorun_cannot_draw_is_one_warning(tmp_path, caplog):
    """A factory's env (pkg.module:factory): no renderer neurorun knows."""
    from tests.cli.failing_env import SPEC

    with caplog.at_level(logging.WARNING, logger="neurorun"):
        result = run(config(f"env={SPEC}", "problem.episode_length=null", "generations=3",
                            "logger.video_every=1"), run_dir=tmp_path)
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert f"no video of generation 1 (ValueError: env {SPEC!r} is made by a factory" in warning
    assert warning.endswith("Fix: set logger.video_every=null")
    assert result["generation"] == 3 and not (tmp_path / "videos").exists()


def test_videos_change_nothing_a_resumed_run_computes(tmp_path):
    """A run cut after generation 2 with a video of every generation, resumed to 4, has the
    metrics of a run without videos (observation statistics on: state a video could touch)."""
    common = ("problem.observation_normalization=true", "checkpoint_every=1")
    run(config(*common, "generations=4"), run_dir=tmp_path / "straight")
    cut = tmp_path / "cut"
    run(config(*common, "generations=2", "logger.video_every=1"), run_dir=cut)
    run(load_run_config(cut, ["generations=4"]), run_dir=cut)
    assert sorted(p.name for p in (cut / "videos").iterdir()) == [
        f"gen_{g}.gif" for g in (1, 2, 3, 4)]
    assert without_time(metrics(cut)) == without_time(metrics(tmp_path / "straight"))


def test_a_video_leaves_the_problem_and_the_random_streams_as_they_were(tmp_path):
    problem = make_problem("CartPole-v1", "Linear(obs_length, act_length)", episode_length=30,
                           observation_normalization=True)
    problem.evaluate(torch.randn(4, problem.solution_length), seed=1)
    before = (problem.state_dict(), random.getstate(), np.random.get_state(),
              torch.get_rng_state())
    videos = RunVideos(tmp_path, 1)
    assert videos.record(1, problem, torch.randn(problem.solution_length), 7, Logger()).is_file()
    after = (problem.state_dict(), random.getstate(), np.random.get_state(),
             torch.get_rng_state())
    assert repr(after) == repr(before)
    videos.close()
    problem.close()


def test_a_signal_during_a_video_saves_the_generation_and_resumes_exactly(tmp_path,
                                                                          monkeypatch):
    original = GymPlayer.frames

    def interrupted(self, policy, seed, episode):
        for count, frame in enumerate(original(self, policy, seed, episode)):
            if count == 3:
                os.kill(os.getpid(), signal.SIGTERM)
            yield frame

    common = ("problem.observation_normalization=true", "checkpoint_every=1")
    run(config(*common, "generations=4"), run_dir=tmp_path / "straight")
    cut = tmp_path / "cut"
    with monkeypatch.context() as patch:
        patch.setattr(GymPlayer, "frames", interrupted)
        with pytest.raises(RunInterrupted):
            Runner(config(*common, "generations=4", "logger.video_every=2"), run_dir=cut).run()
    assert torch.load(cut / "checkpoints" / "state.pt", weights_only=True)["generation"] == 2
    assert list((cut / "videos").iterdir()) == []  # the interrupted video left nothing
    run(load_run_config(cut, []), run_dir=cut)
    assert without_time(metrics(cut)) == without_time(metrics(tmp_path / "straight"))
    assert sorted(p.name for p in (cut / "videos").iterdir()) == ["gen_4.gif"]


def test_a_video_write_killed_mid_way_leaves_nothing_after_a_resume(tmp_path):
    """A SIGKILL during a video leaves its temporary file (an MP4's writer its own beside it);
    the resumed run removes them and writes its videos."""
    run(config("generations=1", "logger.video_every=1"), run_dir=tmp_path)
    videos = tmp_path / "videos"
    leftovers = [videos / ".gen_2.gif.x1y2.tmp", videos / ".gen_2.mp4.a9.tmp.mp4"]
    for path in leftovers:
        path.write_bytes(b"half a video")
    run(load_run_config(tmp_path, ["generations=2"]), run_dir=tmp_path)
    assert sorted(p.name for p in videos.iterdir()) == ["gen_1.gif", "gen_2.gif"]


@pytest.mark.parametrize(("overrides", "message"), [
    (["logger.video_every=-1"], "logger.video_every=-1: expected an integer >= 0"),
    (["logger.video_every=1.5"], "logger.video_every=1.5: expected an integer >= 0"),
    (["logger.video_format=avi"], "logger.video_format='avi': expected gif or mp4"),
])
def test_bad_video_settings_are_one_line(tmp_path, overrides, message):
    with pytest.raises(ConfigError, match=message) as raised:
        Runner(config(*overrides), run_dir=tmp_path / "run")
    assert "Fix: " in str(raised.value) and "\n" not in str(raised.value)
    assert not (tmp_path / "run").exists()


def test_mp4_without_imageio_ffmpeg_names_the_extra_only_where_videos_are_on(tmp_path,
                                                                             monkeypatch):
    real = extras.find_spec
    monkeypatch.setattr(extras, "find_spec",
                        lambda name, *a: None if name == "imageio_ffmpeg" else real(name, *a))
    with pytest.raises(ConfigError, match=r"^logger.video_format=mp4 needs imageio_ffmpeg: pip "
                                          r"install 'neurorun\[video\]', or logger.video_format"
                                          r"=gif$"):
        Runner(config("logger.video_format=mp4", "logger.video_every=1"), run_dir=tmp_path / "a")
    run(config("logger.video_format=mp4", "generations=1"), run_dir=tmp_path / "b")


# played in a fresh process: MuJoCo reads MUJOCO_GL once, as it is imported, and the run picks it
PLAY = """
import json, logging, sys, torch
from neurorun.problems.playback import prepare_mujoco_gl
if prepare_mujoco_gl() is None:
    print(json.dumps(None)); sys.exit()
logging.basicConfig(level=logging.INFO, format="%(message)s")  # the video's own line
from neurorun.loggers.base import Logger
from neurorun.loggers.videos import RunVideos
from neurorun.problems import make_problem
spec, folder = sys.argv[1:]
problem = make_problem(spec, "Linear(obs_length, act_length)", episode_length=60,
                       observation_normalization=True)
problem.evaluate(torch.randn(4, problem.solution_length), seed=1)
center = 0.3 * torch.randn(problem.solution_length, generator=torch.Generator().manual_seed(2))
returns, lengths = problem.test_episodes(center, 1, 12345)
path = RunVideos(folder, 1).record(1, problem, center, 12345, Logger())
print(json.dumps([returns.item(), int(lengths.item()), str(path)]))
"""


@pytest.mark.parametrize("spec", [
    "gym::InvertedPendulum-v5",  # a few seconds; the jax envs compile for a minute
    pytest.param("brax::inverted_pendulum", marks=[pytest.mark.extras("jax"), pytest.mark.slow]),
    pytest.param("playground::CartpoleBalance",
                 marks=[pytest.mark.extras("playground"), pytest.mark.slow]),
])
def test_a_mujoco_video_plays_the_center_evaluations_episode(tmp_path, spec):
    """The video's episode is the run's first test episode (its return and length, from
    test_episodes), one 320 x 240 frame after the reset and after each step."""
    env = {k: v for k, v in os.environ.items() if k != "MUJOCO_GL"}
    result = subprocess.run([sys.executable, "-c", PLAY, spec, str(tmp_path)], env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    played = json.loads(result.stdout.splitlines()[-1])
    if played is None:
        pytest.skip("MuJoCo cannot draw offscreen here (no EGL nor OSMesa)")
    episode_return, length, path = played
    said = re.search(r"video of generation 1: .* \(return (\S+), (\d+) steps", result.stderr)
    assert said, result.stderr[-3000:]
    assert (float(said[1]), int(said[2])) == (pytest.approx(episode_return, rel=1e-5), length)
    with Image.open(path) as gif:
        assert gif.size == (320, 240)
    assert played_frames(Path(path)) == length + 1
