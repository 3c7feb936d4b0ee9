"""Ctrl-C, SIGTERM, SIGUSR1 and SIGHUP end a real `neurorun` process the same way: a checkpoint of
the last finished generation, the resume command, exit status 128 + signal, no traceback."""

from __future__ import annotations

import csv
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

NEURORUN = [sys.executable, "-m", "neurorun.cli.app"]
RUN = [*NEURORUN, "env=Pendulum-v1", "env.backend=gymnasium",
       "algo.popsize=10", "problem.episode_length=50", "eval_every=0", "target_score=null",
       "checkpoint_every=1000", "logger.console.plain=true"]


def start(run_dir: Path, *args: str, ignored: tuple[int, ...] = ()) -> subprocess.Popen:
    """A long neurorun run in `run_dir`, started with the `ignored` signals ignored, as `nohup`
    starts it with SIGHUP."""
    def signals() -> None:
        for signum in ignored:
            signal.signal(signum, signal.SIG_IGN)

    return subprocess.Popen([*RUN, "generations=100000", *args, f"hydra.run.dir={run_dir}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=signals)


def wait_for_rows(process: subprocess.Popen, run_dir: Path, rows: int) -> None:
    deadline = time.monotonic() + 120
    while data_rows(run_dir) < rows and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.1)


def data_rows(run_dir: Path) -> int:
    path = run_dir / "metrics.csv"
    return max(0, len(path.read_text().splitlines()) - 1) if path.is_file() else 0


# SIGHUP: what a closed SSH session sends
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGUSR1,
                                    signal.SIGHUP])
def test_a_signal_checkpoints_the_last_finished_generation(tmp_path, signum):
    run_dir = tmp_path / "run"
    process = start(run_dir)
    deadline = time.monotonic() + 120
    while data_rows(run_dir) < 3 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.1)
    process.send_signal(signum)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 128 + signum, err
    assert "Traceback" not in err
    assert f"neurorun resume={run_dir}" in err
    # checkpoint_every=1000: before the fix nothing was saved
    state = torch.load(run_dir / "checkpoints" / "state.pt", weights_only=True)
    finished = state["generation"]
    assert finished >= 3 and data_rows(run_dir) in (finished, finished + 1)
    resumed = subprocess.run([*NEURORUN, f"resume={run_dir}", f"generations={finished + 2}"],
                             capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert data_rows(run_dir) == finished + 2


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_as_the_run_starts_is_one_line(tmp_path, signum):
    """A signal as soon as Hydra made the run folder (Hydra still writing its files, or the
    run being built): exit 128 + signal, one non-empty line, no traceback. SIGTERM while the
    run was built ended the process with no word."""
    run_dir = tmp_path / "run"
    process = start(run_dir)
    deadline = time.monotonic() + 120
    while not (run_dir / ".hydra").is_dir() and time.monotonic() < deadline:
        time.sleep(0.01)
    process.send_signal(signum)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 128 + signum, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("neurorun: ")]
    assert lines and all(line.strip() != "neurorun:" for line in lines), err
    said = "interrupted (Ctrl-C)" if signum == signal.SIGINT else "stopped by SIGTERM"
    assert f"neurorun: {said}" in err


def test_ctrl_c_while_hydra_sets_the_job_up_is_not_lost(tmp_path):
    """A Ctrl-C as Hydra wrote the run folder and its logging was lost about once in 60
    stressed starts (the run went on): there a KeyboardInterrupt can be raised where Python
    only reports it. The signal now waits for the run's start: exit 130, no run folder left."""
    from tests.cli.swallowed_interrupt import TARGET

    run_dir = tmp_path / "run"
    process = start(run_dir, f"+hydra.callbacks.ctrl_c._target_={TARGET}")
    try:
        out, err = process.communicate(timeout=120)
    finally:
        process.kill()  # a lost Ctrl-C: the run would go on
    assert process.returncode == 130, err
    assert "neurorun: interrupted (Ctrl-C)" in err and "Traceback" not in err
    assert not run_dir.exists() and "run folder" not in out


def test_a_run_started_under_nohup_goes_on_through_sighup(tmp_path):
    """SIGHUP stops a run like SIGTERM, except where the run was started
    ignoring it (`nohup neurorun ... &`): that run survives the closed session."""
    run_dir = tmp_path / "run"
    process = start(run_dir, ignored=(signal.SIGHUP,))
    wait_for_rows(process, run_dir, 2)
    process.send_signal(signal.SIGHUP)
    before = data_rows(run_dir)
    wait_for_rows(process, run_dir, before + 3)
    assert process.poll() is None and data_rows(run_dir) >= before + 3
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 128 + signal.SIGTERM, err


def test_a_closed_terminal_checkpoints_the_run(tmp_path):
    """Closing the run's terminal (an SSH session that ends) sends SIGHUP and
    makes every later write to it fail: the run still saves its last finished generation,
    logs the resume command and exits 129."""
    import os
    import pty

    run_dir = tmp_path / "run"
    pid, terminal = pty.fork()
    if pid == 0:  # the child: a neurorun run on the terminal, as typed in an SSH session
        os.execv(sys.executable, [*RUN, "generations=100000", f"hydra.run.dir={run_dir}"])
    deadline = time.monotonic() + 120
    while data_rows(run_dir) < 4 and time.monotonic() < deadline:
        try:
            os.read(terminal, 65536)  # what it shows (a full terminal would block it)
        except OSError:
            break
    os.close(terminal)  # hang up
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 128 + signal.SIGHUP
    state = torch.load(run_dir / "checkpoints" / "state.pt", weights_only=True)
    assert state["generation"] >= 3
    log = (run_dir / "neurorun.log").read_text()
    assert f"neurorun resume={run_dir}" in log and "Traceback" not in log


def test_ctrl_c_while_the_command_loads_its_modules_is_one_line(tmp_path):
    """Ctrl-C in the first second, while `neurorun` imports torch and
    Hydra (before main() runs), gave Python's KeyboardInterrupt traceback."""
    script = Path(sys.executable).with_name("neurorun")
    process = subprocess.Popen([str(script), "debug=default"], cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    maps = Path(f"/proc/{process.pid}/maps")
    deadline = time.monotonic() + 60
    while "torch" not in maps.read_text() and time.monotonic() < deadline:  # torch loading
        time.sleep(0.005)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert err.strip() == "neurorun: interrupted (Ctrl-C)" and out == ""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_while_the_command_loads_its_modules_is_one_line(tmp_path, signum):
    """SIGTERM while `neurorun` imported its modules ended it with exit
    status 143 and no output at all."""
    script = Path(sys.executable).with_name("neurorun")
    process = subprocess.Popen([str(script), "debug=default"], cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    maps = Path(f"/proc/{process.pid}/maps")
    deadline = time.monotonic() + 60
    while "torch" not in maps.read_text() and time.monotonic() < deadline:  # torch loading
        time.sleep(0.005)
    process.send_signal(signum)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 128 + signum, err
    assert err.strip() == f"neurorun: stopped by {signal.Signals(signum).name}" and out == ""


def _metrics(run_dir: Path) -> list[dict[str, str]]:
    with open(run_dir / "metrics.csv", newline="") as file:
        return [{k: v for k, v in row.items() if k not in ("elapsed_s", "steps_per_s")}
                for row in csv.DictReader(file)]


def test_a_curriculum_run_stopped_by_a_signal_resumes_to_the_same_metrics(tmp_path):
    """SIGTERM mid-run, then a resume: every generation's metrics equal a run straight through
    (the cut follows the saved interaction count)."""
    curriculum = ["problem.episode_length_schedule=[[0,10],[3000,50]]",
                  "problem.vectorization=sync"]
    stopped = tmp_path / "stopped"
    process = start(stopped, *curriculum)
    wait_for_rows(process, stopped, 3)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 128 + signal.SIGTERM, err
    finished = torch.load(stopped / "checkpoints" / "state.pt", weights_only=True)["generation"]
    total = finished + 3
    resumed = subprocess.run([*NEURORUN, f"resume={stopped}", f"generations={total}"],
                             capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    straight = tmp_path / "straight"
    done = subprocess.run([*RUN, *curriculum, f"generations={total}",
                           f"hydra.run.dir={straight}"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    rows = _metrics(straight)
    assert _metrics(stopped) == rows and len(rows) == total
    assert float(rows[0]["episode_length_max"]) == 10  # the first generation was cut
    assert float(rows[-1]["episode_length_max"]) > 10  # and the cut grew
