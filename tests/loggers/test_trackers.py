"""TensorBoard, MLflow and W&B: what a run logged is read back through each tracker's own
API and compared with the run's metrics.csv; a missing one names its extra."""

import csv
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from neurorun.cli.app import compose_config
from neurorun.common.errors import ConfigError
from neurorun.loggers import make_loggers
from neurorun.loop.runner import Runner
from neurorun.loop.status import StopLimits
from neurorun.record.layout import written_names

from .test_make_loggers import typed

GENERATIONS = 3


def tracked_run(folder: Path, tracker: str, *overrides: str) -> list[dict[str, str]]:
    """A 3-generation run with one tracker on; its metrics.csv rows."""
    cfg = compose_config(["debug=default", f"generations={GENERATIONS}",
                          f"logger.{tracker}.enabled=true", *overrides])
    Runner(cfg, run_dir=folder).run()
    # what the tracker wrote is named in record/layout.py (a link there is refused, not followed)
    assert {path.name for path in folder.iterdir()} <= set(written_names())
    with open(folder / "metrics.csv", newline="") as file:
        return list(csv.DictReader(file))


def tensorboard_events(folder: Path) -> Iterator[Any]:
    """The events of TensorBoard event files (TFRecord framing: an 8-byte length, its CRC, the
    Event protobuf, its CRC), decoded with tensorboardX's own protobuf."""
    from tensorboardX.proto.event_pb2 import Event

    for path in sorted(folder.glob("events.out.tfevents.*")):
        data, pos = path.read_bytes(), 0
        while pos < len(data):
            length = int.from_bytes(data[pos:pos + 8], "little")
            yield Event.FromString(data[pos + 12:pos + 12 + length])
            pos += 12 + length + 4


def tensorboard_scalars(folder: Path, tag: str) -> list[tuple[int, float]]:
    """(step, value) of a tag in TensorBoard event files."""
    return [(event.step, v.simple_value) for event in tensorboard_events(folder)
            for v in event.summary.value if v.tag == tag]


@pytest.mark.extras("tensorboard")
def test_tensorboard_events_hold_the_metrics_and_the_config(tmp_path):
    rows = tracked_run(tmp_path, "tensorboard", "algo.popsize=12")
    assert tensorboard_scalars(tmp_path / "tensorboard", "mean_eval") == [
        (int(r["generation"]), pytest.approx(float(r["mean_eval"]), rel=1e-6)) for r in rows]
    (text,) = [v.tensor.string_val[0].decode() for event in tensorboard_events(
        tmp_path / "tensorboard") for v in event.summary.value if v.tag.startswith("config")]
    assert "| algo.popsize | 12 |" in text.splitlines() and "| env.id | CartPole-v1 |" in text


@pytest.mark.extras("mlflow")
def test_mlflow_holds_metrics_params_and_artifacts_in_the_run_folder(tmp_path):
    from mlflow.tracking import MlflowClient

    rows = tracked_run(tmp_path, "mlflow", "algo.popsize=12", "algo.center_learning_rate=0.25")
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")  # the default store
    (run,) = client.search_runs([client.get_experiment_by_name("neurorun").experiment_id])
    history = client.get_metric_history(run.info.run_id, "mean_eval")
    assert [(m.step, m.value) for m in history] == [
        (int(r["generation"]), pytest.approx(float(r["mean_eval"]), rel=1e-12)) for r in rows]
    assert run.data.params["algo.popsize"] == "12"
    assert run.data.params["algo.center_learning_rate"] == "0.25"  # an option: beside popsize
    assert run.data.params["env.id"] == "CartPole-v1"
    local = Path(client.download_artifacts(run.info.run_id, "", str(tmp_path / "download")))
    assert (local / "metrics.csv").read_bytes() == (tmp_path / "metrics.csv").read_bytes()
    best = tmp_path / "checkpoints"
    for name in ("best.pt", "best.json"):
        assert (local / "checkpoints" / name).read_bytes() == (best / name).read_bytes()
    assert str(tmp_path / "mlartifacts") in run.info.artifact_uri


def wandb_records(path: Path, wait_s: float = 120.0) -> list[Any]:
    """The records of an offline W&B run file, once it holds the run's ``exit`` record:
    wandb's writer process may still be writing it when ``wandb.finish`` has returned (seen on
    a loaded machine), so the file is read again until then (at most ``wait_s``)."""
    from google.protobuf.message import DecodeError

    deadline = time.monotonic() + wait_s
    while True:
        try:
            records = list(_wandb_file_records(path))
        except DecodeError:  # a record half written
            records = []
        if any(r.WhichOneof("record_type") == "exit" for r in records) or (
                time.monotonic() > deadline):
            return records
        time.sleep(0.2)


def _wandb_file_records(path: Path) -> Iterator[Any]:
    """The records of an offline W&B run file (LevelDB's log format behind a 7-byte header),
    decoded with wandb's own protobuf."""
    from wandb.proto.wandb_internal_pb2 import Record

    data, block = path.read_bytes(), 32768
    assert data[:4] == b":W&B"
    pos, chunk = 7, b""
    while pos + 7 <= len(data):
        if block - pos % block < 7:  # a block's tail too short for a header is padding
            pos += block - pos % block
            continue
        length, kind = int.from_bytes(data[pos + 4:pos + 6], "little"), data[pos + 6]
        chunk += data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):  # a full record, or the last piece of one
            yield Record.FromString(chunk)
            chunk = b""


@pytest.mark.extras("wandb")
def test_wandb_offline_holds_metrics_config_and_artifacts(tmp_path):
    rows = tracked_run(tmp_path, "wandb", "algo.popsize=12")
    (run_file,) = (tmp_path / "wandb").glob("offline-run-*/run-*.wandb")
    history, config, saved = {}, {}, []
    for record in wandb_records(run_file):
        kind = record.WhichOneof("record_type")
        if kind == "history":
            items = {i.key or "/".join(i.nested_key): json.loads(i.value_json)
                     for i in record.history.item}
            history[items["_step"]] = items
        elif kind == "run":
            config.update({i.key: json.loads(i.value_json) for i in record.run.config.update})
        elif kind == "files":
            saved += [f.path for f in record.files.files]
    assert sorted(history) == [int(r["generation"]) for r in rows]
    for row in rows:
        assert history[int(row["generation"])]["mean_eval"] == pytest.approx(
            float(row["mean_eval"]), rel=1e-12)
    assert config["algo"]["popsize"] == 12 and config["env"]["id"] == "CartPole-v1"
    # the files `wandb sync` uploads: in the run's files/ folder and announced in the run file
    assert {"metrics.csv", "checkpoints/best.pt", "checkpoints/best.json"} <= set(saved)
    files = run_file.parent / "files"
    assert (files / "metrics.csv").read_bytes() == (tmp_path / "metrics.csv").read_bytes()
    assert (files / "checkpoints" / "best.pt").read_bytes() == (
        tmp_path / "checkpoints" / "best.pt").read_bytes()


@pytest.mark.parametrize(("overrides", "message"), [
    pytest.param(["logger.mlflow.enabled=true", "logger.mlflow.tracking_uri=bogus://nowhere"],
                 "logger.mlflow could not start", marks=pytest.mark.extras("mlflow")),
    (["logger.wandb.enabled=true", "logger.wandb.mode=ofline"],
     "logger.wandb.mode='ofline': expected one of offline, online, disabled"),
    # nothing listens on port 9 of this machine: refused at once, not after MLflow's retries
    pytest.param(["logger.mlflow.enabled=true", "logger.mlflow.tracking_uri=http://127.0.0.1:9"],
                 "no tracking server answers at 127.0.0.1:9", marks=pytest.mark.extras("mlflow")),
    # W&B's refusal of the name came with a fix about logging in
    pytest.param(["logger.wandb.enabled=true", "logger.wandb.project='a/b#c'"],
                 r"logger.wandb could not start \(UsageError: Invalid project name 'a/b#c': .*"
                 r"Fix: logger.wandb.project=<a name of at most 128 characters without / \\ # "
                 r"\? % :>, or set logger.wandb.enabled=false\.$",
                 marks=pytest.mark.extras("wandb")),
])
def test_a_tracker_that_cannot_start_is_one_line_naming_the_setting(tmp_path, overrides,
                                                                    message):
    with pytest.raises(ConfigError, match=message) as error:
        Runner(compose_config(["debug=default", *overrides]), run_dir=tmp_path)
    assert "Fix: " in str(error.value) and "\n" not in str(error.value)


@pytest.mark.parametrize(("section", "modules", "extra"), [
    ("tensorboard", ("torch.utils.tensorboard", "tensorboardX"), "tensorboard"),
    ("mlflow", ("mlflow",), "mlflow"),
    ("wandb", ("wandb",), "wandb"),
])
def test_a_missing_tracker_names_the_pip_extra(tmp_path, monkeypatch, section, modules, extra):
    for module in modules:
        monkeypatch.setitem(sys.modules, module, None)  # makes `import module` fail
    settings = typed({section: {"enabled": True}, "console": {"quiet": True}})
    with pytest.raises(ImportError, match=rf"pip install neurorun\[{extra}\]"):
        make_loggers(settings, tmp_path, StopLimits(generations=1))


@pytest.mark.extras("wandb")
def test_wandb_online_without_its_server_fails_in_seconds_and_leaves_no_folder(tmp_path):
    """W&B online with no server to reach (nothing listens on port 9 here)
    stalled ~100 s in W&B's retries and left a run folder with wandb/ in it."""
    import os
    import subprocess
    import time

    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env.update(WANDB_API_KEY="x" * 40, WANDB_BASE_URL="http://127.0.0.1:9",
               WANDB_CONFIG_DIR=str(tmp_path / "wandb-config"))  # no user settings
    started = time.monotonic()
    result = subprocess.run(
        [str(Path(sys.executable).with_name("neurorun")), "debug=default",
         "logger.wandb.enabled=true", "logger.wandb.mode=online", "hydra.run.dir=run"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=90)
    assert result.returncode == 2, result.stderr[-3000:]
    assert time.monotonic() - started < 55  # the bug: ~100 s in W&B's retries
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("neurorun: config")]
    assert "logger.wandb could not start" in line and "127.0.0.1:9" in line
    assert "logger.wandb.mode=offline" in line
    assert not (tmp_path / "run").exists()


def test_a_tracking_server_behind_a_proxy_is_checked_through_the_proxy(monkeypatch):
    """Where the environment names a proxy, the server is reached through it (a machine whose
    only way out is a proxy is not refused); a proxy that does not answer is named."""
    from neurorun.loggers.trackers import _check_server

    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("https_proxy", "http://127.0.0.1:9")
    with pytest.raises(ConnectionError, match="no proxy answers at 127.0.0.1:9"):
        _check_server("https://tracker.invalid")
