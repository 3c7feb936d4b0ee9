"""neurorun-render: frame counts of a CartPole GIF against a plain gymnasium loop."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from PIL import Image

from neurorun.common import extras
from neurorun.tools import render as render_tool
from neurorun.tools.video import write_video

from .helpers import BIAS, WEIGHT, save_checkpoint, save_policy


def expected_frames(seed: int, episodes: int, limit: int) -> list[list[np.ndarray]]:
    """Per episode: the frame after reset and after every step (rgb_array), seeds seed + i."""
    env = gym.make("CartPole-v1", render_mode="rgb_array")
    result = []
    for index in range(episodes):
        obs, _ = env.reset(seed=seed + index)
        frames, done = [env.render()], False
        while not done:
            obs, _, terminated, truncated, _ = env.step(int(np.argmax(WEIGHT @ obs + BIAS)))
            frames.append(env.render())
            done = terminated or truncated or len(frames) - 1 == limit
        result.append(frames)
    env.close()
    return result


def test_gif_holds_every_frame(run_dir, tmp_path):
    out = tmp_path / "policy.gif"
    episodes = render_tool.render(str(run_dir), out, episodes=2, seed=3, fps=20, max_steps=25)
    expected = expected_frames(3, 2, 25)
    assert [len(e.frames) for e in episodes] == [len(f) for f in expected]  # length + 1 each
    assert [e.length + 1 for e in episodes] == [len(f) for f in expected]
    frames = [frame for episode in expected for frame in episode]
    with Image.open(out) as gif:
        assert gif.size == (frames[0].shape[1], frames[0].shape[0])
        durations = []
        for index in range(gif.n_frames):
            gif.seek(index)
            durations.append(gif.info["duration"])
    # Pillow stores a run of identical frames once, with the durations summed.
    changes = sum(not np.array_equal(a, b) for a, b in zip(frames, frames[1:], strict=False))
    assert len(durations) == 1 + changes
    assert sum(durations) == len(frames) * 50  # 20 fps: 50 ms per frame, exact in GIF


def test_an_upper_case_suffix_names_the_same_format(tmp_path):
    """`--out r.GIF` was refused as not a .gif or .mp4 file."""
    frames = [np.full((4, 6, 3), value, dtype=np.uint8) for value in (0, 255)]
    out = write_video(frames, tmp_path / "r.GIF", fps=10)
    with Image.open(out) as gif:
        assert (gif.format, gif.size, gif.n_frames) == ("GIF", (6, 4), 2)


def test_a_render_says_only_what_it_wrote(run_dir, tmp_path):
    """SDL printed "Error: XDG_RUNTIME_DIR is invalid or not set in the environment." where no
    desktop session runs."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("XDG_RUNTIME_DIR", "SDL_VIDEODRIVER", "SDL_AUDIODRIVER")}
    script = Path(sys.executable).with_name("neurorun-render")
    result = subprocess.run([str(script), str(run_dir), "--out", str(tmp_path / "v.gif"),
                             "--max-steps", "3"], capture_output=True, text=True, env=env,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stderr == ""
    assert result.stdout.startswith(f"wrote {tmp_path / 'v.gif'} (4 frames)")


@pytest.mark.extras("envpool")
def test_an_envpool_run_renders_with_gymnasiums_env(tmp_path):
    folder = save_checkpoint(tmp_path / "run", env="envpool::CartPole-v1")
    episodes = render_tool.render(str(folder), tmp_path / "policy.gif", episodes=1, seed=3,
                                  max_steps=25)
    (expected,) = expected_frames(3, 1, 25)
    assert len(episodes[0].frames) == len(expected)
    assert all(np.array_equal(a, b) for a, b in zip(episodes[0].frames, expected, strict=True))


def test_a_users_mujoco_gl_that_fails_is_named_with_its_fix(tmp_path):
    """MUJOCO_GL=bogus said egl and osmesa were tried and to install them: neither was."""
    folder = save_policy(tmp_path / "run", "InvertedPendulum-v5", "Linear(obs_length, act_length)")
    script = Path(sys.executable).with_name("neurorun-render")
    done = subprocess.run([str(script), str(folder), "--out", str(tmp_path / "p.gif")],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "MUJOCO_GL": "bogus"})
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert "with MUJOCO_GL='bogus' from the environment. Fix: unset MUJOCO_GL" in line
    assert "tried MUJOCO_GL=egl" not in line and not (tmp_path / "p.gif").exists()


@pytest.mark.extras("jax")
def test_a_users_mujoco_gl_that_brax_cannot_load_is_named_with_its_fix(tmp_path):
    """brax's import of MuJoCo refuses MUJOCO_GL=bogus: the tools named it until gymnasium's
    envs got their own error for it (then they advised installing brax)."""
    folder = save_policy(tmp_path / "run", "InvertedPendulum-v5", "Linear(obs_length, act_length)")
    script = Path(sys.executable).with_name("neurorun-eval")
    done = subprocess.run([str(script), str(folder), "--env", "brax::inverted_pendulum"],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "MUJOCO_GL": "bogus"})
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert "its env 'brax::inverted_pendulum' cannot be made here" in line
    assert line.endswith("with MUJOCO_GL='bogus' from the environment. Fix: unset MUJOCO_GL, "
                         "or set it to egl or osmesa")


@pytest.mark.extras("video")
def test_mp4_holds_every_frame(run_dir, tmp_path):
    import imageio.v2 as imageio

    out = tmp_path / "policy.mp4"
    render_tool.render(str(run_dir), out, episodes=2, seed=3, fps=30, max_steps=25)
    with imageio.get_reader(out, format="FFMPEG") as reader:
        assert reader.count_frames() == sum(map(len, expected_frames(3, 2, 25)))


def test_mp4_without_imageio_ffmpeg_names_the_extra(run_dir, tmp_path, monkeypatch, capsys):
    real = extras.find_spec
    monkeypatch.setattr(extras, "find_spec",
                        lambda name, *a: None if name == "imageio_ffmpeg" else real(name, *a))
    out = tmp_path / "policy.mp4"
    assert render_tool.main([str(run_dir), "--out", str(out)]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1
    assert error == ("neurorun-render: error: --out .mp4 needs imageio_ffmpeg: pip install "
                     "'neurorun[video]', or write a .gif")
    assert not out.exists()


def test_html_is_only_for_brax(run_dir, tmp_path, capsys):
    assert render_tool.main([str(run_dir), "--out", str(tmp_path / "x.html")]) == 2
    assert "brax" in capsys.readouterr().err


def test_a_render_that_cannot_fit_in_memory_is_refused_before_its_episodes(run_dir, tmp_path,
                                                                           monkeypatch, capsys):
    """Every frame is held for the video; the largest count that fits, from
    the memory available, a frame's size and the episodes' step limit."""
    from neurorun.tools import episodes

    monkeypatch.setattr(episodes, "available_memory", lambda: 50_000_000)
    out = tmp_path / "policy.gif"
    code = render_tool.main([str(run_dir), "--out", str(out), "--episodes", "100000",
                             "--max-steps", "5"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    frame = 400 * 600 * 3  # CartPole's rgb_array frame
    fits = int(0.8 * 50_000_000 // (frame * (5 + 1) * episodes.FRAME_COPIES))
    assert f"--episodes {fits} or fewer" in err and "--episodes 100000 " in err
    assert not out.exists()


# brax humanoid drawn at its start and 4 m further along x, by neurorun-render's writer (argv[1]
# "tool": a GIF) or from a camera (an index): how far the body's pixels (neither the floor's
# black nor its white) move between the two frames, and the fewest body pixels in a frame
BODY_SHIFT = """
import sys, tempfile
from pathlib import Path
from types import SimpleNamespace
import numpy as np
from PIL import Image
from brax import envs
from neurorun.problems.playback import PositionsDrawing
from neurorun.tools.brax_render import _write

model = envs.get_environment("humanoid", backend="spring").sys.mj_model
moved = model.qpos0.copy()
moved[0] += 4.0
states = [SimpleNamespace(q=model.qpos0), SimpleNamespace(q=moved)]
if sys.argv[1] == "tool":
    out = Path(tempfile.mkdtemp()) / "moved.gif"
    _write(SimpleNamespace(mj_model=model), states, out, 10.0)
    with Image.open(out) as gif:
        frames = []
        for index in range(2):
            gif.seek(index)
            frames.append(np.asarray(gif.convert("RGB")))
else:
    drawing = PositionsDrawing(model, int(sys.argv[1]))
    frames = [drawing(state.q) for state in states]
centers, counts = [], []
for frame in frames:
    pixels = frame.astype(int)
    body = (pixels.max(-1) - pixels.min(-1) > 40) & (pixels.max(-1) < 200)
    counts.append(int(body.sum()))
    centers.append(np.argwhere(body).mean(0) if body.sum() > 20 else np.array([1e9, 1e9]))
print(float(np.abs(centers[1] - centers[0]).max()), min(counts))
"""


@pytest.mark.extras("jax")
def test_brax_frames_follow_the_body_as_a_runs_videos_do():
    """neurorun-render's brax frames come from the camera a run's videos use (the model's
    first, which follows the humanoid): the body stays in place where MuJoCo's free camera
    (-1) loses it."""
    def shift(how: str) -> tuple[float, int]:
        done = subprocess.run([sys.executable, "-c", BODY_SHIFT, how], capture_output=True,
                              text=True, timeout=300,
                              env={**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL",
                                                                              "egl")})
        assert done.returncode == 0, done.stderr[-2000:]
        moved, fewest = done.stdout.split()[-2:]
        return float(moved), int(fewest)

    moved, fewest = shift("tool")
    assert fewest > 100 and moved < 3  # seen in both frames, in the same place
    assert shift("-1")[0] > 20
