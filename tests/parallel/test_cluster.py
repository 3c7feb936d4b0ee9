"""A two-node ray cluster on this machine (`ray start --head`, then a worker with
`--address`), joined with address=host:port; closing the evaluator leaves the cluster up."""

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import ray

RAY = shutil.which("ray", path=str(Path(sys.executable).parent)) or "ray"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _ray_cli(*args: str) -> str:
    # ray 2.60: `ray start --address` only finds the head's auth token in token mode
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token"}
    done = subprocess.run([RAY, *args], capture_output=True, text=True, env=env, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture
def two_nodes():
    assert not ray.is_initialized()
    address = f"127.0.0.1:{_free_port()}"
    try:
        _ray_cli("start", "--head", f"--port={address.split(':')[1]}", "--num-cpus=1",
                 "--node-ip-address=127.0.0.1", "--include-dashboard=false")
        _ray_cli("start", f"--address={address}", "--num-cpus=1",
                 "--node-ip-address=127.0.0.1")
        yield address
    finally:
        _ray_cli("stop", "--force")


DRIVER = """
import sys, numpy as np, ray, torch
from neurorun.parallel import RayEvaluator
from neurorun.problems import make_problem
kwargs = {"env": "CartPole-v1", "seed": 2, "vectorization": "sync"}
local = make_problem(**kwargs)
params = torch.randn(6, local.solution_length, generator=torch.Generator().manual_seed(1))
with RayEvaluator(kwargs, num_actors="max", address=sys.argv[1]) as evaluator:
    assert evaluator.num_actors == 2, evaluator.num_actors  # one per CPU over both nodes
    assert len([n for n in ray.nodes() if n["Alive"]]) == 2
    np.testing.assert_array_equal(evaluator.evaluate(params).numpy(),
                                  local.evaluate(params).numpy())
assert not ray.is_initialized()
print("driver ok")
"""


@pytest.mark.slow
def test_joined_cluster_equals_local_and_stays_up(two_nodes):
    # A fresh process: ray reads RAY_AUTH_MODE when it is imported.
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_USAGE_STATS_ENABLED": "0"}
    done = subprocess.run([sys.executable, "-c", DRIVER, two_nodes], capture_output=True,
                          text=True, env=env, timeout=240)
    assert "driver ok" in done.stdout, done.stdout + done.stderr[-3000:]
    status = _ray_cli("status", f"--address={two_nodes}")  # the cluster is still up
    assert status.count("node_") == 2, status
