"""Optional experiment trackers: TensorBoard, MLflow (a SQLite database in the run folder),
W&B (offline).

Each imports its package only when enabled; a missing package raises an ImportError that
names the pip extra to install, and a tracker that fails to start raises a TrackerError (a
ValueError) naming the setting and the fix. Each runs behind a time bound (`bounded.Bounded`:
one that fails or stalls later is dropped with one line). MLflow and W&B also keep the run's
metrics.csv and best policy (checkpoints/best.pt and best.json) as artifacts when the run ends;
each keeps the run's videos as they are made (``Logger.video``).
"""

from __future__ import annotations

import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from neurorun.common.errors import one_line
from neurorun.common.settings import setting
from neurorun.loggers.base import Logger, LoggerContext, flatten, numeric_items
from neurorun.loggers.bounded import Bounded, TrackerError, TrackerSettings
from neurorun.record.layout import (
    BEST_POLICY,
    CSV_NAME,
    MLFLOW_ARTIFACTS,
    MLFLOW_DB,
    TENSORBOARD_DIR,
    VIDEOS_DIR,
    policy_path,
)


def tracker_error(name: str, error: Exception, fix: str) -> TrackerError:
    return TrackerError(f"logger.{name} could not start "
                        f"({one_line(error, with_type=True, first_line=True)}). "
                        f"Fix: {fix}, or set logger.{name}.enabled=false.")


def artifacts(run_dir: Path) -> list[Path]:
    """What a tracker keeps of a finished run: its metrics and its best policy."""
    return [path for path in (run_dir / CSV_NAME, policy_path(run_dir, BEST_POLICY, ".pt"),
                              policy_path(run_dir, BEST_POLICY, ".json")) if path.is_file()]


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


def _cell(value: Any) -> str:
    """``value`` as one cell of a markdown table."""
    return str(value).replace("|", "\\|").replace("\n", " ")


class TensorBoardLogger(Logger):
    """Scalars under `<run>/tensorboard`, one step per generation; the config as a table (its
    Text tab)."""

    Settings = TrackerSettings

    def __init__(self, run_dir: str | Path):
        self.writer = _summary_writer()(str(Path(run_dir) / TENSORBOARD_DIR))

    @classmethod
    def from_settings(cls, settings: TrackerSettings, context: LoggerContext) -> Logger:
        return Bounded("tensorboard", lambda: cls(context.run_dir),
                       timeout_s=settings.timeout_s,
                       fix=f"check the disk of {context.run_dir / TENSORBOARD_DIR}")

    def start(self, config: Mapping[str, Any]) -> None:
        rows = "".join(f"\n| {key} | {_cell(value)} |" for key, value in flatten(config).items())
        self.writer.add_text("config", f"| key | value |\n|---|---|{rows}", 0)  # flushed by log

    def log(self, generation: int, status: Mapping[str, Any]) -> None:
        for key, value in numeric_items(status).items():
            self.writer.add_scalar(key, value, generation)
        self._closing_on_error(self.writer.flush)

    def video(self, generation: int, path: Path) -> None:
        """A GIF as TensorBoard's video summary, an animated image (its Images tab): what
        ``add_video`` writes, without the moviepy it needs to encode frames. TensorBoard plays
        no MP4: ``logger.video_format=mp4`` leaves it out."""
        if path.suffix != ".gif":
            return
        from PIL import Image

        with Image.open(path) as gif:
            width, height = gif.size
        if type(self.writer).__module__.startswith("tensorboardX"):
            from tensorboardX.proto.summary_pb2 import Summary
        else:  # torch's writer, on the tensorboard package's protobuf
            from tensorboard.compat.proto.summary_pb2 import Summary
        image = Summary.Image(height=height, width=width, colorspace=3,
                              encoded_image_string=path.read_bytes())
        self.writer._get_file_writer().add_summary(  # both writers' own way to add one
            Summary(value=[Summary.Value(tag="video", image=image)]), generation)
        self._closing_on_error(self.writer.flush)

    def close(self, summary: Mapping[str, Any]) -> None:
        self._closing_on_error(self.writer.close)

    def _closing_on_error(self, write: Any) -> None:
        """``write()``; where it fails (a full disk), the writer is given up before the error
        goes on: closing it would fail again, and tensorboardX would try at exit (a traceback)
        and leave its thread reading a closed queue (another). Its events are lost either way."""
        try:
            write()
        except OSError:
            for file_writer in getattr(self.writer, "all_writers", {}).values():
                events = file_writer.event_writer
                worker = getattr(events, "_worker", None)  # tensorboardX's writing thread
                if worker is not None:
                    worker.stop()
                events._closed = True  # both writers' mark: nothing to flush or close
            raise


SERVER_TIMEOUT_S = 5.0  # a tracking server that does not answer this fast is reported


def _check_server(uri: str) -> None:
    """Ask an http(s) tracking server (through the proxy the environment names for it) for its
    front page once: a refused or silent one, even one that accepts connections and never
    answers, fails in seconds (MLflow's and W&B's own retries, minutes of them, are for a
    server that was up and went away). Any answer, an HTTP error or a TLS one too, will do."""
    parsed = urllib.parse.urlsplit(uri)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        return
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    host = f"[{parsed.hostname}]" if ":" in parsed.hostname else parsed.hostname
    proxy = urllib.request.getproxies().get(parsed.scheme)
    if not proxy or urllib.request.proxy_bypass(parsed.hostname):
        proxy = None
    try:  # no user or password in the address asked: only whether it answers
        urllib.request.urlopen(urllib.request.Request(f"{parsed.scheme}://{host}:{port}/",
                                                      method="HEAD"),
                               timeout=SERVER_TIMEOUT_S).close()
    except (urllib.error.HTTPError, ssl.SSLError):
        return
    except OSError as error:
        reason = getattr(error, "reason", error)
        if isinstance(reason, ssl.SSLError):
            return
        if proxy:
            proxied = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
            host, port = proxied.hostname, proxied.port or 80
        said = getattr(reason, "strerror", None) or str(reason) or type(reason).__name__
        raise ConnectionError(f"no {'proxy' if proxy else 'tracking server'} answers at "
                              f"{host}:{port} ({said})") from error


@dataclass(frozen=True)
class MLflowSettings(TrackerSettings):
    """``logger.mlflow.*``."""

    tracking_uri: str | None = None  # None: a SQLite database in the run folder
    experiment: str | None = "neurorun"  # null: neurorun


class MLflowLogger(Logger):
    """An MLflow run; without a tracking URI, in a SQLite database `<run>/mlflow.db` with the
    artifacts in `<run>/mlartifacts` (MLflow 3 no longer takes a plain folder as a store)."""

    Settings = MLflowSettings

    def __init__(self, run_dir: str | Path, *, tracking_uri: str | None = None,
                 experiment: str = "neurorun"):
        try:
            import mlflow
        except ImportError as error:
            raise missing_extra("mlflow", "mlflow", error) from error
        self.mlflow = mlflow
        self.run_dir = Path(run_dir).resolve()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        uri = tracking_uri or f"sqlite:///{self.run_dir / MLFLOW_DB}"
        try:
            _check_server(uri)
            mlflow.set_tracking_uri(uri)
            if mlflow.get_experiment_by_name(experiment) is None:
                location = None if tracking_uri else (self.run_dir / MLFLOW_ARTIFACTS).as_uri()
                mlflow.create_experiment(experiment, artifact_location=location)
            mlflow.set_experiment(experiment)
            self.run = mlflow.start_run(run_name=self.run_dir.name)
        except Exception as error:  # MLflow raises its own types for stores and servers
            raise tracker_error("mlflow", error, f"check logger.mlflow.tracking_uri={uri!r} "
                                "(null: a SQLite database in the run folder)") from error

    @classmethod
    def from_settings(cls, settings: MLflowSettings, context: LoggerContext) -> Logger:
        uri = settings.tracking_uri
        return Bounded("mlflow", lambda: cls(context.run_dir, tracking_uri=uri,
                                             experiment=settings.experiment or "neurorun"),
                       timeout_s=settings.timeout_s,
                       fix=f"check the server of logger.mlflow.tracking_uri={uri!r}" if uri
                       else f"check the disk of {context.run_dir}")

    def start(self, config: Mapping[str, Any]) -> None:
        params = {key: str(value)[:500] for key, value in flatten(config).items()}
        self.mlflow.log_params(params)

    def log(self, generation: int, status: Mapping[str, Any]) -> None:
        self.mlflow.log_metrics(numeric_items(status), step=generation)

    def video(self, generation: int, path: Path) -> None:
        self.mlflow.log_artifact(str(path), artifact_path=VIDEOS_DIR)

    def close(self, summary: Mapping[str, Any]) -> None:
        for path in artifacts(self.run_dir):
            self.mlflow.log_artifact(str(path), artifact_path=str(
                path.parent.relative_to(self.run_dir)) if path.parent != self.run_dir else None)
        self.mlflow.end_run()


WANDB_MODES = ("offline", "online", "disabled")


@dataclass(frozen=True)
class WandbSettings(TrackerSettings):
    """``logger.wandb.*``."""

    project: str | None = "neurorun"  # null: neurorun
    mode: str | None = setting("offline", choices=WANDB_MODES)  # null: offline


class WandbLogger(Logger):
    """A Weights & Biases run, offline by default (files under `<run>/wandb`)."""

    Settings = WandbSettings
    MODES = WANDB_MODES

    def __init__(self, run_dir: str | Path, *, project: str = "neurorun", mode: str = "offline"):
        if mode not in self.MODES:
            raise TrackerError(f"logger.wandb.mode={mode!r}: expected one of "
                               f"{', '.join(self.MODES)}. Fix: logger.wandb.mode=offline (files "
                               "in the run folder, `wandb sync` uploads later).")
        try:
            import wandb
        except ImportError as error:
            raise missing_extra("wandb", "wandb", error) from error
        try:  # W&B's own rule for the name (its refusal inside wandb.init named the mode)
            wandb.Settings(project=project)
        except Exception as error:
            raise tracker_error("wandb", error, "logger.wandb.project=<a name of at most 128 "
                                "characters without / \\ # ? % :>") from error
        self.wandb = wandb
        self.run_dir = Path(run_dir).resolve()
        self.project = project
        self.mode = mode
        self.run: Any = None
        if mode == "online":  # before wandb.init, which retries for minutes and writes wandb/
            try:
                _check_server(wandb.setup().settings.base_url)  # env, `wandb login --host`
            except Exception as error:
                wandb.teardown()
                raise tracker_error("wandb", error, "logger.wandb.mode='online' needs its "
                                    "server reachable (WANDB_BASE_URL or `wandb login --host` "
                                    "name another); logger.wandb.mode=offline needs no network "
                                    "(`wandb sync` uploads later)") from error

    @classmethod
    def from_settings(cls, settings: WandbSettings, context: LoggerContext) -> Logger:
        mode = settings.mode or "offline"
        return Bounded("wandb", lambda: cls(context.run_dir, project=settings.project or "neurorun",
                                            mode=mode),
                       timeout_s=settings.timeout_s,
                       fix="check W&B's server, or logger.wandb.mode=offline (no network; "
                       "`wandb sync` uploads later)" if mode == "online"
                       else f"check the disk of {context.run_dir}")

    def start(self, config: Mapping[str, Any]) -> None:
        try:
            self.run = self.wandb.init(project=self.project, mode=self.mode,
                                       dir=str(self.run_dir), name=self.run_dir.name,
                                       config=dict(config))
        except Exception as error:  # wandb raises its own types (login, network, settings)
            raise tracker_error("wandb", error, f"logger.wandb.mode={self.mode!r} needs a "
                                "login when online; logger.wandb.mode=offline needs none "
                                "(`wandb sync` uploads later)") from error

    def log(self, generation: int, status: Mapping[str, Any]) -> None:
        self.run.log(numeric_items(status), step=generation)

    def video(self, generation: int, path: Path) -> None:
        self.run.log({"video": self.wandb.Video(str(path), format=path.suffix[1:])},
                     step=generation)

    def close(self, summary: Mapping[str, Any]) -> None:
        if self.run is None:
            return
        for path in artifacts(self.run_dir):
            self.run.save(str(path), base_path=str(self.run_dir), policy="now")
        self.run.finish()
