"""Loggers: one `log(generation, status)` interface for the console, metric files and trackers,
registered in LOGGERS.

    from neurorun.loggers import make_loggers
    loggers = make_loggers(cfg.logger, run_dir, limits)   # console + metrics.csv/.jsonl + extras
    loggers.start(config_dict); loggers.begin(); loggers.log(generation, status)
    loggers.close(summary)
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from neurorun.loggers.base import Limits, Logger, LoggerContext, LoggerGroup
from neurorun.loggers.console import ConsoleLogger
from neurorun.loggers.files import MetricsFiles
from neurorun.loggers.trackers import MLflowLogger, TensorBoardLogger, WandbLogger

# every logger by the name of its config section (`logger.<name>`), in the order they log;
# a new logger is a Logger subclass with its `Settings` and `from_settings` in its own file,
# plus its row here (and its section, with what each key means, in conf/logger/default.yaml)
LOGGERS: dict[str, type[Logger]] = {
    "console": ConsoleLogger,
    "metrics": MetricsFiles,  # no config section: always written
    "tensorboard": TensorBoardLogger,
    "mlflow": MLflowLogger,
    "wandb": WandbLogger,
}


def make_loggers(settings: Any, run_dir: str | Path, limits: Limits,
                 offsets: Mapping[str, int] | None = None) -> LoggerGroup:
    """The loggers `settings` (the config's `logger` section) asks for: each of LOGGERS that
    is always on or whose section says `enabled: true`.

    Args:
        settings: `logger.*` (`neurorun.config.schema.logger_section`: one attribute per
            name of LOGGERS that has a section).
        run_dir: the run folder.
        limits: stop conditions, for the console's progress bar.
        offsets: the metric files' sizes at the checkpoint being resumed (None: fresh files).

    Raises:
        ImportError: an enabled tracker's package is missing (names the pip extra).
    """
    context = LoggerContext(Path(run_dir), limits, offsets)
    loggers = []
    for name, kind in LOGGERS.items():
        section = getattr(settings, name, None)
        if kind.always_on or getattr(section, "enabled", False):
            loggers.append(kind.from_settings(section, context))
    return LoggerGroup(loggers)


__all__ = ["LOGGERS", "ConsoleLogger", "Limits", "Logger", "LoggerContext", "LoggerGroup",
           "MLflowLogger", "MetricsFiles", "TensorBoardLogger", "WandbLogger", "make_loggers"]
