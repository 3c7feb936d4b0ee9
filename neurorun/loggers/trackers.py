"""Optional experiment trackers: TensorBoard, MLflow (local file store), W&B (offline).

Each imports its package only when enabled; a missing package raises an ImportError that
names the pip extra to install.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from neurorun.loggers.base import Logger, flatten, numeric_items


def missing_extra(name: str, extra: str, error: ImportError) -> ImportError:
    return ImportError(
        f"logger.{name}.enabled=true needs the {name} package, which is not installed "
        f"({error}). Fix: pip install neurorun[{extra}], or set logger.{name}.enabled=false."
    )


def _summary_writer() -> type:
    try:
        from torch.utils.tensorboard import SummaryWriter  # needs the tensorboard package
    except ImportError as first:
        try:
            from tensorboardX import SummaryWriter
        except ImportError:
            raise missing_extra("tensorboard", "tensorboard", first) from first
    return SummaryWriter


class TensorBoardLogger(Logger):
    """Scalars under `<run>/tensorboard`, one step per generation."""

    def __init__(self, run_dir: str | Path):
        self.writer = _summary_writer()(str(Path(run_dir) / "tensorboard"))

    def log(self, generation: int, status: Mapping[str, Any]) -> None:
        for key, value in numeric_items(status).items():
            self.writer.add_scalar(key, value, generation)
        self.writer.flush()

    def close(self, summary: Mapping[str, Any]) -> None:
        self.writer.close()


class MLflowLogger(Logger):
    """An MLflow run (a local file store `<run>/mlruns` unless a tracking URI is given)."""

    def __init__(self, run_dir: str | Path, *, tracking_uri: str | None = None,
                 experiment: str = "neurorun"):
        try:
            import mlflow
        except ImportError as error:
            raise missing_extra("mlflow", "mlflow", error) from error
        self.mlflow = mlflow
        mlflow.set_tracking_uri(tracking_uri or (Path(run_dir).resolve() / "mlruns").as_uri())
        mlflow.set_experiment(experiment)
        self.run = mlflow.start_run(run_name=Path(run_dir).name)

    def start(self, config: Mapping[str, Any]) -> None:
        params = {key: str(value)[:500] for key, value in flatten(config).items()}
        self.mlflow.log_params(params)

    def log(self, generation: int, status: Mapping[str, Any]) -> None:
        self.mlflow.log_metrics(numeric_items(status), step=generation)

    def close(self, summary: Mapping[str, Any]) -> None:
        self.mlflow.end_run()


class WandbLogger(Logger):
    """A Weights & Biases run, offline by default (files under `<run>/wandb`)."""

    def __init__(self, run_dir: str | Path, *, project: str = "neurorun", mode: str = "offline"):
        try:
            import wandb
        except ImportError as error:
            raise missing_extra("wandb", "wandb", error) from error
        self.wandb = wandb
        self.run_dir = Path(run_dir)
        self.project = project
        self.mode = mode
        self.run: Any = None

    def start(self, config: Mapping[str, Any]) -> None:
        self.run = self.wandb.init(project=self.project, mode=self.mode, dir=str(self.run_dir),
                                   name=self.run_dir.name, config=dict(config))

    def log(self, generation: int, status: Mapping[str, Any]) -> None:
        self.run.log(numeric_items(status), step=generation)

    def close(self, summary: Mapping[str, Any]) -> None:
        if self.run is not None:
            self.run.finish()
