"""An evaluator that starts its own ray leaves no ray process behind when closed."""

import psutil
import pytest
import ray
import torch

from neurorun.parallel import RayEvaluator
from neurorun.problems import Evaluator

pytestmark = pytest.mark.extras("ray")


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_close_stops_the_ray_it_started_and_every_process():
    assert not ray.is_initialized()
    # children of earlier tests (e.g. the wandb service a tracker test leaves) are not ray's
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    kwargs = {"env": "CartPole-v1", "seed": 0}
    with RayEvaluator(kwargs, num_actors=1, num_cpus=1) as evaluator:
        assert isinstance(evaluator, Evaluator)  # what the runner asks of a Problem
        assert evaluator.evaluate(torch.zeros(3, evaluator.solution_length)).shape == (3,)
        started = [p for p in psutil.Process().children(recursive=True) if p.pid not in before]
        names = " ".join(p.name() for p in started)
        assert "raylet" in names and "gcs_server" in names
    assert not ray.is_initialized()
    psutil.wait_procs(started, timeout=60)  # a killed actor exits late on a loaded machine
    left = [f"{p.pid} {p.name()}" for p in started if _alive(p)]
    assert not left, f"ray processes still running after close: {left}"
