"""Fixtures of the tools' tests: a CartPole checkpoint and a fabricated sweep folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .helpers import rows, save_checkpoint, write_run


@pytest.fixture(autouse=True)
def _quiet_pygame(monkeypatch):
    monkeypatch.setenv("SDL_AUDIODRIVER", "dummy")
    # render probes for an OpenGL backend and sets MUJOCO_GL: keep that out of other tests
    monkeypatch.setenv("MUJOCO_GL", os.environ.get("MUJOCO_GL", "egl"))


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return save_checkpoint(tmp_path / "run")


@pytest.fixture
def sweep(tmp_path: Path) -> Path:
    """algo=pgpe and algo=snes, two seeds each, same generations; a multirun.yaml at the top."""
    root = tmp_path / "sweep"
    write_run(root / "0_pgpe_s0", rows([1, 2, 3], center=[1, None, 5]),
              ["seed=0", "algo=pgpe", "generations=3"])
    write_run(root / "1_snes_s0", rows([4, 6, 8], center=[2, 3, 4]),
              ["seed=0", "algo=snes", "generations=3"])
    write_run(root / "2_pgpe_s1", rows([3, 2, 7], center=[3, 9, 1]),
              ["seed=1", "algo=pgpe", "generations=3"])
    write_run(root / "3_snes_s1", rows([0, 6, 10], center=[2, 5, 6]),
              ["seed=1", "algo=snes", "generations=3"])
    (root / "multirun.yaml").write_text("hydra: {}\n")
    return root
