"""A run trained once for the record's tests: a debug run (PGPE with ClipUp, no observation
normalization), 2 generations, checkpointed every generation."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from neurorun.cli.app import compose_config

QUIET = "logger.console.quiet=true"


@pytest.fixture(scope="module")
def trained_once(tmp_path_factory) -> Path:
    from neurorun.loop.runner import run

    folder = tmp_path_factory.mktemp("trained") / "run"
    run(compose_config(["debug=default", QUIET]), run_dir=folder)
    return folder


@pytest.fixture
def trained(trained_once, tmp_path) -> Path:
    """A copy of the trained run, this test's to change."""
    return Path(shutil.copytree(trained_once, tmp_path / "run"))
