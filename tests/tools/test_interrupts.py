"""Ctrl-C stops every tool with one line and exit status 130, and leaves no output file: while
its modules load, while it works, and where the interrupt was swallowed by a callback (jax's
garbage-collection hook reports it as "Exception ignored" and goes on)."""

from __future__ import annotations

import gc
import os
import re
import signal
import subprocess
import sys
import time
import weakref
from pathlib import Path

import pytest

from neurorun.tools.common import run_tool, write_output


def _wait_for_handlers(pid: int, timeout_s: float = 60.0) -> None:
    """Wait until process ``pid`` catches SIGTERM: the tools' startup has put its handlers in
    (``SigCgt`` in /proc/<pid>/status, a bit per signal caught)."""
    deadline = time.monotonic() + timeout_s
    while True:
        caught = re.search(r"SigCgt:\s*(\w+)", Path(f"/proc/{pid}/status").read_text())[1]
        if int(caught, 16) >> (signal.SIGTERM - 1) & 1:
            return
        assert time.monotonic() < deadline, "the tool put in no signal handlers"
        time.sleep(0.005)


def _swallowed_interrupt() -> None:
    """A Ctrl-C that lands in a finalizer: Python prints "Exception ignored" and goes on."""

    class Held:
        pass

    held = Held()
    weakref.finalize(held, lambda: os.kill(os.getpid(), signal.SIGINT))
    del held
    gc.collect()


def test_an_interrupt_a_callback_swallowed_stops_the_tool_before_it_writes(tmp_path, capsys):
    """No "Exception ignored" report either: one line."""
    out = tmp_path / "policy.onnx"

    def body() -> None:
        _swallowed_interrupt()
        write_output(out, lambda path: path.write_bytes(b"exported"), "policy")

    assert run_tool("neurorun-export", body) == 130
    assert not out.exists() and list(tmp_path.iterdir()) == []
    assert capsys.readouterr().err == "neurorun-export: interrupted\n"


def test_an_interrupt_after_the_output_is_written_still_ends_with_130(tmp_path, capsys):
    out = tmp_path / "table.csv"

    def body() -> None:
        write_output(out, lambda path: path.write_text("a,b\n"), "table")
        _swallowed_interrupt()

    assert run_tool("neurorun-compare", body) == 130
    assert "neurorun-compare: interrupted" in capsys.readouterr().err


def test_a_tool_keeps_the_handlers_it_found(tmp_path):
    before = signal.getsignal(signal.SIGINT), sys.unraisablehook
    assert run_tool("neurorun-plot", lambda: 0) == 0
    assert (signal.getsignal(signal.SIGINT), sys.unraisablehook) == before


@pytest.mark.parametrize("tool", ["neurorun-export", "neurorun-eval"])
def test_ctrl_c_while_a_tool_loads_its_modules_is_one_line(tmp_path, tool):
    script = Path(sys.executable).with_name(tool)
    process = subprocess.Popen([str(script), str(tmp_path / "missing")], stderr=subprocess.PIPE,
                               text=True)
    _wait_for_handlers(process.pid)  # then importing torch takes seconds
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert err.strip().splitlines() == [f"{tool}: interrupted (Ctrl-C)"]


def test_a_ctrl_c_a_tool_took_does_not_outlive_it(tmp_path):
    """A later export in the same process (a notebook) writes its file."""
    assert run_tool("neurorun-export", _swallowed_interrupt) == 130
    out = tmp_path / "later.txt"
    write_output(out, lambda path: path.write_text("later"), "table")
    assert out.read_text() == "later"


def test_a_tool_leaves_an_ignored_ctrl_c_ignored():
    """A shell's background job starts with SIGINT ignored: the tool keeps it so."""
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        seen = []
        run_tool("neurorun-plot", lambda: seen.append(signal.getsignal(signal.SIGINT)))
        assert seen == [signal.SIG_IGN]
    finally:
        signal.signal(signal.SIGINT, before)
