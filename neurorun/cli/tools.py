"""The tools' console scripts (`neurorun-eval`, `-render`, `-plot`, `-compare`, `-export`):
a signal while a tool's modules load (torch, jax: seconds) is one line and 128 + its number, as
for `neurorun` (:mod:`neurorun.cli.startup` guards the imports); the tool then takes Ctrl-C
itself (``tools.common.run_tool``)."""

from __future__ import annotations

import importlib
import sys

import neurorun.cli.startup  # first: it guards the imports below


def _run(module: str) -> None:
    tool = importlib.import_module(f"neurorun.tools.{module}")
    neurorun.cli.startup.loaded()
    sys.exit(tool.main())


def evaluate() -> None:
    _run("evaluate")


def render() -> None:
    _run("render")


def plot() -> None:
    _run("plot")


def compare() -> None:
    _run("compare")


def export() -> None:
    _run("export")
