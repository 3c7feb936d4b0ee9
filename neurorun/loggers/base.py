"""The one interface every logger implements, and a group that fans out to several."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from neurorun.common.values import is_number


class Limits(Protocol):
    """What the loggers read of a run's stop rules (the run loop's ``StopLimits``): how far the
    closest one is, and the target."""

    target_score: float | None

    def progress(self, status: Mapping[str, Any]) -> tuple[str, float]:
        """(name, fraction done) of the stop rule closest to ending the run."""


@dataclass(frozen=True)
class LoggerContext:
    """What a logger may need of its run besides its own config section."""

    run_dir: Path
    limits: Limits  # the stop conditions (the console's progress bar)
    offsets: Mapping[str, int] | None = None  # the metric files' sizes to resume at (None: fresh)


class Logger:
    """A sink for the status dict of each generation.

    `start` receives the run's resolved config (a plain dict) once, `log` every generation's
    status (the keys listed in docs/architecture.md), `video` the run's videos, `close` the
    final summary.
    `offsets` returns what a resumed run needs to append exactly where the checkpoint was.
    A logger is built by `from_settings` from its section of the config (`logger.<name>`,
    its name in `neurorun.loggers.LOGGERS`), declared by its `Settings` dataclass (the keys and
    their ranges, `neurorun.common.settings.setting`; the YAML of logger/default.yaml holds the
    values and says what each means).
    """

    always_on = False  # True: runs in every run; False: when its section says `enabled: true`
    Settings: ClassVar[type | None] = None  # its config section (None: it has none)

    @classmethod
    def from_settings(cls, settings: Any, context: LoggerContext) -> Logger:
        """The logger its config section (a ``Settings``, None where it has none) asks for."""
        raise NotImplementedError

    def start(self, config: Mapping[str, Any]) -> None:
        """Called once before the first generation."""

    def begin(self) -> None:
        """Called once everything is built and checked, right before the first generation
        (what a user reads as "the run started" belongs here, not in `start`)."""

    def log(self, generation: int, status: Mapping[str, Any]) -> None:
        raise NotImplementedError

    def video(self, generation: int, path: Path) -> None:
        """A video of generation ``generation``'s center (``logger.video_every``), a GIF or an
        MP4 file at ``path`` in the run folder: trackers keep it beside the metrics."""

    def offsets(self) -> dict[str, int]:
        """Positions to resume from (e.g. file sizes); empty when nothing needs restoring."""
        return {}

    def sync(self) -> None:
        """Make what was logged durable (called before a state pointing past it is saved)."""

    def close(self, summary: Mapping[str, Any]) -> None:
        """Called once after the last generation (also when the run fails)."""


class LoggerGroup(Logger):
    """Several loggers behind the same interface."""

    def __init__(self, loggers: Iterable[Logger]):
        self.loggers = list(loggers)

    def start(self, config: Mapping[str, Any]) -> None:
        for logger in self.loggers:
            logger.start(config)

    def begin(self) -> None:
        for logger in self.loggers:
            logger.begin()

    def log(self, generation: int, status: Mapping[str, Any]) -> None:
        for logger in self.loggers:
            logger.log(generation, status)

    def video(self, generation: int, path: Path) -> None:
        for logger in self.loggers:
            logger.video(generation, path)

    def offsets(self) -> dict[str, int]:
        merged: dict[str, int] = {}
        for logger in self.loggers:
            merged.update(logger.offsets())
        return merged

    def sync(self) -> None:
        for logger in self.loggers:
            logger.sync()

    def close(self, summary: Mapping[str, Any]) -> None:
        for logger in self.loggers:
            logger.close(summary)


def numeric_items(status: Mapping[str, Any]) -> dict[str, float]:
    """The finite numbers of `status` (what scalar trackers can plot)."""
    items = {}
    for key, value in status.items():
        if not is_number(value):
            continue
        if math.isfinite(value):
            items[key] = float(value)
    return items


def flatten(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """`{"algo": {"popsize": 10}}` -> `{"algo.popsize": 10}` (lists stay values)."""
    flat: dict[str, Any] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten(value, name + "."))
        else:
            flat[name] = value
    return flat
