"""Loggers: one `log(generation, status)` interface for the console, metric files and trackers.

    from neurorun.loggers import make_loggers
    loggers = make_loggers(cfg.logger, run_dir, limits)   # console + metrics.csv/.jsonl + extras
    loggers.start(config_dict); loggers.begin(); loggers.log(generation, status)
    loggers.close(summary)
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from neurorun.loggers.base import Logger, LoggerGroup
from neurorun.loggers.console import ConsoleLogger
from neurorun.loggers.files import MetricsFiles
from neurorun.loggers.trackers import MLflowLogger, TensorBoardLogger, WandbLogger
from neurorun.status import StopLimits


def _section(settings: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    return settings.get(name) or {}


def make_loggers(settings: Mapping[str, Any], run_dir: str | Path, limits: StopLimits,
                 offsets: Mapping[str, int] | None = None) -> LoggerGroup:
    """The loggers `settings` (the config's `logger` section) asks for.

    Args:
        settings: `logger.*` as a mapping (console, tensorboard, mlflow, wandb sections).
        run_dir: the run folder.
        limits: stop conditions, for the console's progress bar.
        offsets: the metric files' sizes at the checkpoint being resumed (None: fresh files).

    Raises:
        ImportError: an enabled tracker's package is missing (names the pip extra).
    """
    console = _section(settings, "console")
    loggers: list[Logger] = [
        ConsoleLogger(limits, plain=console.get("plain"), quiet=bool(console.get("quiet")),
                      show_config=bool(console.get("show_config", True))),
        MetricsFiles(run_dir, offsets),
    ]
    if _section(settings, "tensorboard").get("enabled"):
        loggers.append(TensorBoardLogger(run_dir))
    mlflow = _section(settings, "mlflow")
    if mlflow.get("enabled"):
        loggers.append(MLflowLogger(run_dir, tracking_uri=mlflow.get("tracking_uri"),
                                    experiment=mlflow.get("experiment") or "neurorun"))
    wandb = _section(settings, "wandb")
    if wandb.get("enabled"):
        loggers.append(WandbLogger(run_dir, project=wandb.get("project") or "neurorun",
                                   mode=wandb.get("mode") or "offline"))
    return LoggerGroup(loggers)


__all__ = ["ConsoleLogger", "Logger", "LoggerGroup", "MLflowLogger", "MetricsFiles",
           "StopLimits", "TensorBoardLogger", "WandbLogger", "make_loggers"]
