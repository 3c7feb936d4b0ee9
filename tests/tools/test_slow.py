"""End-to-end tools on brax and MuJoCo (slow: jit compilation, MuJoCo rendering)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from PIL import Image

from neurorun.tools import evaluate, render

pytestmark = pytest.mark.slow


def save(folder, env):
    from neurorun.common import atomic
    from neurorun.problems import make_problem
    from neurorun.record import checkpoint

    problem = make_problem(env, "Linear(obs_length, act_length)")
    meta = {"env": env, "env_config": {}, "architecture": problem.architecture,
            "network_args": {}}
    solution = torch.zeros(problem.solution_length)
    atomic.atomic_write_all(checkpoint.policy_files(
        problem, solution, folder / "checkpoints" / "best", meta))
    problem.close()
    return folder


def test_brax_eval_and_html(tmp_path, capsys):
    run = save(tmp_path / "run", "brax::inverted_pendulum")
    capsys.readouterr()  # importing brax prints notes; the tool's stdout must be JSON alone
    assert evaluate.main([str(run), "--episodes", "2", "--max-steps", "40", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    lengths = [e["length"] for e in summary["episodes"]]
    assert all(1 <= n <= 40 for n in lengths)
    # inverted_pendulum pays 1 per step while the pole is up
    assert [e["return"] for e in summary["episodes"]] == pytest.approx(lengths)
    out = tmp_path / "viewer.html"
    assert render.main([str(run), "--out", str(out), "--max-steps", "40"]) == 0
    assert "<html" in out.read_text().lower()


def test_mujoco_gif(tmp_path):
    run = save(tmp_path / "run", "HalfCheetah-v5")
    out = tmp_path / "cheetah.gif"
    episodes = render.render(str(run), out, max_steps=10, fps=25)
    assert [len(e.frames) for e in episodes] == [11]
    with Image.open(out) as gif:
        frame = np.asarray(gif.convert("RGB"))
    assert frame.std() > 0  # a picture, not a blank buffer
