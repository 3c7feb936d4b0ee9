"""Fixtures of the command's tests: a finished run, and a copy of it for each test."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli.test_signals import NEURORUN


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A finished 2-generation run (debug=default: a checkpoint every generation)."""
    run_dir = tmp_path_factory.mktemp("finished") / "run"
    result = subprocess.run([*NEURORUN, "debug=default", f"hydra.run.dir={run_dir}"],
                            cwd=run_dir.parent, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    return run_dir


@pytest.fixture
def run_copy(finished, tmp_path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(finished, copy)
    return copy
