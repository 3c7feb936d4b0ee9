"""SIGTERM ends a `neurorun` run at any stage of its start, even one where the main thread
waits in compiled code and Python never runs the signal's handler (issue 51 item 1: while jax
made a million host devices, SIGTERM was ignored for minutes)."""

from __future__ import annotations

import signal
import time

from .test_signals import start

TARGET = "tests.cli.stuck_in_c.StuckInC"  # the command runs in the checkout: it imports it


def test_sigterm_ends_a_start_stuck_in_compiled_code_in_one_line(tmp_path):
    process = start(tmp_path / "run", f"+hydra.callbacks.stuck._target_={TARGET}")
    try:
        assert process.stderr.readline() == "stuck\n"
        time.sleep(0.5)  # into the C call
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 128 + signal.SIGTERM, err
    assert err == ("neurorun: stopped by SIGTERM; the run did not answer it within 1 s (busy "
                   "outside Python), so it ends now\n")
