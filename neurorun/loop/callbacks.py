"""Hooks into a run for Python users: `run(cfg, callbacks=...)`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from neurorun.loop.runner import Runner


class Callbacks:
    """Hooks for Python users (like RLlib's callbacks): subclass and override what you need."""

    def on_run_start(self, runner: Runner) -> None:
        """After everything is built (and restored, when resuming), before generation 1."""

    def on_generation_end(self, runner: Runner, generation: int, status: dict[str, Any]) -> None:
        """After each generation is logged; `status` is what the loggers received."""

    def on_run_end(self, runner: Runner, result: dict[str, Any]) -> None:
        """After the final checkpoint; `result` is what `run` returns."""
