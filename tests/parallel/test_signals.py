"""A stop signal during a ray run ends it as it ends any run: the last finished generation
saved, the resume command, exit 128 + the signal (ray.init sets a SIGTERM handler of its own,
which exited with status 15 and no word)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest
import torch

pytestmark = pytest.mark.extras("ray")


def _rows(run_dir) -> int:
    path = run_dir / "metrics.csv"
    return max(0, len(path.read_text().splitlines()) - 1) if path.is_file() else 0


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_during_a_ray_run_checkpoints_it(tmp_path, signum):
    run_dir = tmp_path / "run"
    process = subprocess.Popen(
        [sys.executable, "-m", "neurorun.cli.app", "parallel=ray", "parallel.num_cpus=1",
         "parallel.num_actors=1", "env=Pendulum-v1", "env.backend=gymnasium",
         "algo.popsize=10", "problem.episode_length=50", "eval_every=0", "target_score=null",
         "checkpoint_every=1000", "generations=100000", "logger.console.plain=true",
         f"hydra.run.dir={run_dir}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 180
    while _rows(run_dir) < 2 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.2)
    process.send_signal(signum)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 128 + signum, err[-2000:]
    assert "Traceback" not in err
    assert "resume=" in err
    state = torch.load(run_dir / "checkpoints" / "state.pt", weights_only=True)
    assert state["generation"] >= 2


def test_joining_ray_keeps_the_sigterm_handler_it_found():
    """ray.init sets its own SIGTERM handler (sys.exit(15)); connecting leaves the one that
    was there (the run's, or a Python user's own)."""
    from neurorun.parallel.cluster import connect, disconnect

    def mine(signum, frame):
        pass

    before = signal.signal(signal.SIGTERM, mine)
    try:
        connected = connect(num_cpus=1)
        try:
            assert signal.getsignal(signal.SIGTERM) is mine
        finally:
            if connected:
                disconnect()
    finally:
        signal.signal(signal.SIGTERM, before)
