"""The tools' console scripts (`neurorun-eval`, `-render`, `-plot`, `-compare`, `-export`):
a signal while a tool's modules load (torch, jax: seconds) is one line and 128 + its number, as
for `neurorun` (:mod:`neurorun.cli.startup` guards the imports); the tool then takes Ctrl-C
itself (``tools.common.run_tool``)."""

from __future__ import annotations

import importlib
import signal

import neurorun.cli.startup  # first: it guards the imports below
from neurorun.loop.signals import exit_now


def _run(module: str) -> None:
    """The tool's main, then the process's end at once (``exit_now``): its outputs are written
    and closed by then."""
    tool = importlib.import_module(f"neurorun.tools.{module}")
    neurorun.cli.startup.loaded()
    status = tool.main()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # done: the answer stands
    exit_now(int(status or 0))


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
