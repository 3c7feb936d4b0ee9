"""A signal while jax compiles ends the run promptly: XLA's compiler runs on a thread of its own,
the main thread answers at once, saves the last finished generation, and the process ends with
the compile (its lock on the run folder with it), so a resume never starts beside it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.extras("jax")

RUN = ["env=brax::inverted_pendulum", "problem.devices=1", "problem.episode_length=100",
       "logger.console.plain=true"]
PROMPT_S = 10  # from the signal to the process's end, on a loaded machine (not a compile's)


def _log(run_dir) -> str:
    path = run_dir / "neurorun.log"
    return path.read_text() if path.is_file() else ""


# 40 pairs on one device: the queue program (about 13 s to compile on 2 cores) beside the drain;
# 8: the drain alone (it aborted in XLA's threads as the interpreter exited)
@pytest.mark.parametrize(("signum", "popsize", "program"), [
    (signal.SIGINT, 40, "queue"), (signal.SIGTERM, 40, "queue"), (signal.SIGTERM, 8, "drain")])
def test_a_signal_during_a_compile_ends_the_run_at_once_and_it_resumes(tmp_path, signum,
                                                                      popsize, program):
    run_dir = tmp_path / "run"
    env = {**os.environ, "JAX_COMPILATION_CACHE_DIR": str(tmp_path / "cache")}
    process = subprocess.Popen(
        [sys.executable, "-m", "neurorun.cli.app", *RUN, f"algo.popsize={popsize}",
         "generations=3",
         f"hydra.run.dir={run_dir}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=env)
    deadline = time.monotonic() + 300
    while (f"compiling the {program} program" not in _log(run_dir) and process.poll() is None
           and time.monotonic() < deadline):
        time.sleep(0.1)
    time.sleep(1)  # inside XLA's compiler
    signalled = time.monotonic()
    process.send_signal(signum)
    _, err = process.communicate(timeout=120)
    took = time.monotonic() - signalled
    assert process.returncode == 128 + signum, err
    assert took < PROMPT_S, f"the process ended {took:.1f} s after the signal"
    assert not any(crash in err for crash in ("Traceback", "Exception ignored", "terminate called",
                                              "FATAL", "Segmentation fault"))
    assert f"compiled the {program} program" not in _log(run_dir)  # cut, not waited for
    assert f"neurorun resume={run_dir}" in err
    resumed = subprocess.run([sys.executable, "-m", "neurorun.cli.app", f"resume={run_dir}",
                              "generations=2"], capture_output=True, text=True, env=env,
                             timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert len((run_dir / "metrics.csv").read_text().splitlines()) == 1 + 2
