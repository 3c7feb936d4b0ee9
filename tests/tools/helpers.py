"""Checkpoints and run folders built by hand for the tools' tests."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
import torch

from neurorun.tools import compare, evaluate, export, plot, render

# the tool "plot" as a parameter of tests over tools: neurorun-plot needs matplotlib
PLOT_TOOL = pytest.param("plot", marks=pytest.mark.extras("plots"))
TOOLS = {"eval": evaluate.main, "render": render.main, "plot": plot.main,
         "compare": compare.main, "export": export.main}

# Linear(4, 2) on CartPole: weight (2, 4) row-major, then bias (2,); action = argmax.
WEIGHT = np.array([[-0.05, 0.02, -0.3, 0.01], [0.1, 0.0, 1.0, 0.0]])
BIAS = np.array([0.0, 0.02])
SOLUTION = np.concatenate([WEIGHT.reshape(-1), BIAS]).astype(np.float32)


def save_checkpoint(folder: Path, *, normalize: bool = False, env: str = "CartPole-v1") -> Path:
    """A run folder's checkpoints/best.{pkl,pt,json} for SOLUTION on CartPole-v1 (saved under
    the spec ``env``)."""
    return save_policy(folder, "CartPole-v1", "Linear(obs_length, act_length)",
                       torch.from_numpy(SOLUTION), normalize=normalize, saved_env=env)


def save_policy(folder: Path, env: str, architecture: str, solution: torch.Tensor | None = None,
                *, normalize: bool = False, saved_env: str | None = None,
                env_config: dict | None = None) -> Path:
    """A run folder's checkpoints/best.{pkl,pt,json} for ``architecture`` on ``env`` (saved
    under the spec ``saved_env``, default ``env``, with its keywords ``env_config``): weights
    ``solution`` (default: seeded normal draws), statistics of 50 seeded observations
    ``N(0.1, 0.3²)`` when ``normalize``."""
    from neurorun.common import atomic
    from neurorun.problems import make_problem
    from neurorun.record import checkpoint

    problem = make_problem(env, architecture, observation_normalization=normalize,
                           env_config=env_config)
    generator = torch.Generator().manual_seed(0)
    if normalize:
        problem.obs_stats.update(torch.randn(50, problem.obs_length, generator=generator) * 0.3
                                 + 0.1)
    if solution is None:
        solution = torch.randn(problem.solution_length, generator=generator)
    meta = {"env": saved_env or env, "env_config": env_config or {},
            "architecture": problem.architecture, "network_args": {},
            "obs_length": problem.obs_length,
            "act_length": problem.act_length,
            "observation_normalization": normalize}  # as a run writes them
    atomic.atomic_write_all(checkpoint.policy_files(
        problem, solution, folder / "checkpoints" / "best", meta))
    problem.close()
    return folder


def write_run(folder: Path, rows: list[dict], overrides: list[str]) -> Path:
    """A fabricated run folder: metrics.csv with `rows` and .hydra/overrides.yaml."""
    (folder / ".hydra").mkdir(parents=True)
    (folder / ".hydra" / "overrides.yaml").write_text("".join(f"- {o}\n" for o in overrides))
    columns = list(dict.fromkeys(key for row in rows for key in row))
    with open(folder / "metrics.csv", "w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    return folder


def rows(mean_eval: list[float], *, steps: list[int] | None = None,
         center: list[float | None] | None = None) -> list[dict]:
    """Metric rows for generations 1..n; elapsed_s = generation / 10."""
    result = []
    for index, value in enumerate(mean_eval):
        row = {"generation": index + 1, "mean_eval": value,
               "total_interaction_count": (steps or [100 * (i + 1) for i in
                                                     range(len(mean_eval))])[index],
               "elapsed_s": (index + 1) / 10}
        if center is not None:
            row["center_eval"] = "" if center[index] is None else center[index]
        result.append(row)
    return result


def fails_with(capsys, tool: str, argv: list[str], *words: str) -> str:
    """The one line neurorun-<tool> says on refusing ``argv`` (exit status 2), which holds
    each of ``words``; nothing else is printed (pass capfd to see native code's writes too)."""
    assert TOOLS[tool](argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith(f"neurorun-{tool}: error: ")
    for word in words:
        assert word in lines[0]
    return lines[0]
