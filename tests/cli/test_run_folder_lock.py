"""One run folder, one process: a second `neurorun` on a folder another one is running in stops
before it reads, cleans or writes anything there, naming the other's pid and host; a killed
run leaves no stale lock."""

from __future__ import annotations

import csv
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.cli.test_signals import NEURORUN, RUN, data_rows, start


def wait_rows(process: subprocess.Popen, run_dir: Path, rows: int) -> None:
    deadline = time.monotonic() + 120
    while data_rows(run_dir) < rows and time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[1][-2000:]
        time.sleep(0.1)


def generations(run_dir: Path) -> list[int]:
    with open(run_dir / "metrics.csv", newline="") as file:
        return [int(row["generation"]) for row in csv.DictReader(file)]


@pytest.mark.parametrize("second", ["resume", "new run"])
def test_a_second_process_is_refused_and_the_first_run_stays_whole(tmp_path, second):
    run_dir = tmp_path / "run"
    first = start(run_dir, "checkpoint_every=1")
    try:
        wait_rows(first, run_dir, 3)
        planted = run_dir / "checkpoints" / ".state.pt.live.tmp"  # as the first's live write
        planted.write_bytes(b"partial")
        args = ([f"resume={run_dir}", "generations=5"] if second == "resume"
                else [f"hydra.run.dir={run_dir}", "generations=5"])
        done = subprocess.run([*RUN, *args], capture_output=True, text=True, timeout=120,
                              cwd=tmp_path)
        assert done.returncode == 2, done.stderr[-2000:]
        assert (f"is in use by neurorun pid {first.pid} on host {socket.gethostname()}"
                in done.stderr), done.stderr[-2000:]
        assert "Traceback" not in done.stderr
        assert planted.exists() and first.poll() is None  # nothing of the first's touched
    finally:
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=60)
    assert first.returncode == 128 + signal.SIGINT
    numbers = generations(run_dir)
    assert numbers == list(range(1, len(numbers) + 1))  # one writer: 1, 2, 3, ...


def test_a_killed_run_leaves_no_stale_lock(tmp_path):
    run_dir = tmp_path / "run"
    first = start(run_dir, "checkpoint_every=1")
    wait_rows(first, run_dir, 3)
    first.kill()  # SIGKILL: no handler runs, the kernel releases the lock
    first.communicate(timeout=60)
    target = len(generations(run_dir)) + 3  # a few more than the killed run wrote
    done = subprocess.run([*NEURORUN, f"resume={run_dir}", f"generations={target}"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert generations(run_dir) == list(range(1, target + 1))
