"""TensorBoard on a full disk: after the run's own line, tracebacks at exit
(tensorboardX closing its writer again in an atexit hook, its thread reading a closed queue).
Now one line, and the run goes on without it."""

from __future__ import annotations

import subprocess
import sys

import pytest

# tensorboardX (brax brings it, neurorun[jax]): its events written to /dev/full, whose every
# flush fails with ENOSPC; torch's writer hidden, so tensorboardX writes them
RUN = """
import sys
sys.modules["torch.utils.tensorboard"] = None
import tensorboardX.record_writer
tensorboardX.record_writer.open_file = lambda path: open("/dev/full", "wb")
sys.argv = ["neurorun", *sys.argv[1:]]
from neurorun.cli.app import main
main()
"""


@pytest.mark.extras("jax")
def test_a_full_disk_under_tensorboard_is_one_line_and_the_run_goes_on(tmp_path):
    run_dir = tmp_path / "run"
    done = subprocess.run([sys.executable, "-c", RUN, "debug=default", "generations=3",
                           "logger.tensorboard.enabled=true", "logger.console.plain=true",
                           f"hydra.run.dir={run_dir}"], capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "Exception" not in done.stderr, done.stderr
    said = [line for line in done.stderr.splitlines() if "tensorboard" in line]
    assert said == ["neurorun: logger.tensorboard failed as it logged generation 1 (OSError: "
                    "[Errno 28] No space left on device): the run goes on without it "
                    "(metrics.csv holds every generation). Fix: check the disk of "
                    f"{run_dir / 'tensorboard'}, or set logger.tensorboard.enabled=false"]
    assert len((run_dir / "metrics.csv").read_text().splitlines()) == 1 + 3  # header + rows
