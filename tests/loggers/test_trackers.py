"""TensorBoard, MLflow and W&B adapters: tested when installed; a missing one names its extra."""

import sys

import pytest

from neurorun.loggers import MLflowLogger, TensorBoardLogger, WandbLogger, make_loggers
from neurorun.loggers.console import StopLimits

STATUS = {"generation": 1, "mean_eval": 2.5, "center_eval": None, "stdev_mean": 0.1}


def test_tensorboard_writes_event_files(tmp_path):
    if not any(_importable(m) for m in ("tensorboard", "tensorboardX")):
        pytest.skip("neither tensorboard nor tensorboardX is installed")
    logger = TensorBoardLogger(tmp_path)
    logger.log(1, STATUS)
    logger.close({})
    events = list((tmp_path / "tensorboard").glob("events.out.tfevents.*"))
    assert events and events[0].stat().st_size > 0


@pytest.mark.parametrize(("module", "make", "folder"), [
    ("mlflow", lambda run: MLflowLogger(run, experiment="neurorun-test"), "mlruns"),
    ("wandb", lambda run: WandbLogger(run, mode="offline"), "wandb"),
])
def test_local_tracker_stores_the_run_in_the_run_folder(tmp_path, module, make, folder):
    pytest.importorskip(module)
    logger = make(tmp_path)
    logger.start({"algo": {"name": "pgpe"}})
    logger.log(1, STATUS)
    logger.close({})
    assert (tmp_path / folder).is_dir()


@pytest.mark.parametrize(("section", "modules", "extra"), [
    ("tensorboard", ("torch.utils.tensorboard", "tensorboardX"), "tensorboard"),
    ("mlflow", ("mlflow",), "mlflow"),
    ("wandb", ("wandb",), "wandb"),
])
def test_a_missing_tracker_names_the_pip_extra(tmp_path, monkeypatch, section, modules, extra):
    for module in modules:
        monkeypatch.setitem(sys.modules, module, None)  # makes `import module` fail
    settings = {section: {"enabled": True}, "console": {"quiet": True}}
    with pytest.raises(ImportError, match=rf"pip install neurorun\[{extra}\]"):
        make_loggers(settings, tmp_path, StopLimits(generations=1))


def _importable(name):
    import importlib.util

    return importlib.util.find_spec(name) is not None
