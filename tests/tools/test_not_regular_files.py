"""A FIFO, socket or folder where a tool reads or writes a file:
one line naming the path, exit status 2, never a wait for good.

A FIFO blocks whoever opens it until the other end opens too: the tools hung reading a FIFO
checkpoint or metrics file, or took one for a missing file and blamed another ("only best.pkl",
"needs best.json beside it"), and hung writing an --out FIFO that no process reads."""

from __future__ import annotations

import os
import signal
import socket
from pathlib import Path

import pytest

from .helpers import PLOT_TOOL, fails_with

GUARD_S = 60  # a tool that blocks fails the test (SIGALRM) instead of hanging the suite


@pytest.fixture(autouse=True)
def _no_hang():
    def blocked(*_):
        raise TimeoutError(f"blocked for {GUARD_S} s")

    previous = signal.signal(signal.SIGALRM, blocked)
    signal.alarm(GUARD_S)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def replace_with_fifo(path: Path) -> Path:
    path.unlink()
    os.mkfifo(path)
    return path


@pytest.mark.parametrize(("tool", "name", "given", "flags"), [
    ("eval", "best.pt", "run", []),  # said "only best.pkl"
    ("eval", "best.json", "run", []),
    ("eval", "best.pt", "best.pt", []),  # hung in torch.load
    ("eval", "best.json", "best.pt", []),  # said "needs best.json beside it"
    ("eval", "best.pkl", "best.pkl", ["--trust-pickle"]),  # hung reading it
    ("export", "best.json", "run", ["--format", "torchscript"]),
    ("render", "best.pt", "run", []),
])
def test_a_fifo_at_a_policy_file_is_named(run_dir, tmp_path, capsys, tool, name, given, flags):
    fifo = replace_with_fifo(run_dir / "checkpoints" / name)
    path = run_dir if given == "run" else run_dir / "checkpoints" / given
    out = {"export": tmp_path / "policy.pt", "render": tmp_path / "policy.gif"}.get(tool)
    argv = [str(path), *flags, *(["--out", str(out)] if out else [])]
    fails_with(capsys, tool, argv, f"{str(fifo)!r} is a FIFO, not a regular file")
    assert out is None or not out.exists()


@pytest.mark.parametrize("tool", ["compare", PLOT_TOOL])
@pytest.mark.parametrize("given", ["run", "file"])
def test_a_fifo_at_a_metrics_file_is_named(sweep, tmp_path, capsys, tool, given):
    """metrics.csv as a FIFO was passed over for metrics.jsonl, or its run was said to have no
    metrics; read, it would block."""
    run = sweep / "0_pgpe_s0"
    (run / "metrics.jsonl").write_text('{"generation": 1, "mean_eval": 1.0}\n')
    fifo = replace_with_fifo(run / "metrics.csv")
    out = ["--out", str(tmp_path / "plot.png")] if tool == "plot" else []
    fails_with(capsys, tool, [str(run if given == "run" else fifo), *out],
               f"{str(fifo)!r} is a FIFO, not a regular file")


def test_a_folder_or_socket_at_a_checkpoint_is_named(run_dir, capsys):
    (run_dir / "checkpoints" / "best.json").unlink()
    (run_dir / "checkpoints" / "best.json").mkdir()
    fails_with(capsys, "eval", [str(run_dir)], "best.json' is a folder, not a regular file")
    (run_dir / "checkpoints" / "best.json").rmdir()
    (run_dir / "checkpoints" / "best.pt").unlink()
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(run_dir / "checkpoints" / "best.pt"))
        fails_with(capsys, "eval", [str(run_dir)], "best.pt' is a socket, not a regular file")


@pytest.mark.parametrize(("tool", "flag"), [("compare", "--csv"), ("export", "--out")])
def test_an_output_fifo_that_no_process_reads_is_refused(sweep, run_dir, tmp_path, capsys,
                                                         tool, flag):
    """A FIFO with a reader is written into (test_bad_input); without one, the write waited
    for good, after all the tool's work."""
    fifo = tmp_path / ("out.pt" if tool == "export" else "out.csv")
    os.mkfifo(fifo)
    argv = ([str(sweep), "--csv", str(fifo)] if tool == "compare" else
            [str(run_dir), "--out", str(fifo), "--format", "torchscript", "--force"])
    fails_with(capsys, tool, argv, f"{flag} {str(fifo)!r} is a FIFO that no process reads")


@pytest.mark.parametrize("tool", ["eval", "export"])
def test_a_policy_file_that_cannot_be_read_is_one_line(run_dir, tmp_path, capsys, monkeypatch,
                                                       tool):
    """A best.pt nobody may read was a PermissionError traceback (as root, chmod 000 would not
    refuse: the open is refused here)."""
    from neurorun.tools import common

    refused = run_dir / "checkpoints" / "best.pt"
    real = common.open_regular

    def refusing(path):
        if Path(path) == refused:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(common, "open_regular", refusing)
    flags = ["--format", "torchscript", "--out", str(tmp_path / "p.pt")] if tool == "export" else []
    fails_with(capsys, tool, [str(refused), *flags],
               f"cannot read {str(refused)!r} (Permission denied). Fix: make it readable")
