"""Signals in awkward moments: SIGTERM ends a `neurorun` run at any stage of its
start, even one where the main thread waits in compiled code and Python never runs the signal's
handler (while jax made a million host devices, SIGTERM was ignored for minutes); signals in
quick succession stop a run once, with its state saved."""

from __future__ import annotations

import signal
import time

import torch

from .test_signals import data_rows, start, wait_for_rows

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


def test_three_quick_sigterms_stop_the_run_once_with_its_state_saved(tmp_path):
    """The second and third cut the saving of the state short (nothing to resume with the
    default checkpoint_every), and one after the command's own clean-up killed it by the
    signal's default action instead of exit status 143."""
    run_dir = tmp_path / "run"
    process = start(run_dir)
    wait_for_rows(process, run_dir, 3)
    for _ in range(3):
        process.send_signal(signal.SIGTERM)
        time.sleep(0.01)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 128 + signal.SIGTERM, err
    assert "Traceback" not in err and err.count("neurorun: stopped by SIGTERM") == 1, err
    state = torch.load(run_dir / "checkpoints" / "state.pt", weights_only=True)
    assert state["generation"] >= 3 and data_rows(run_dir) in (state["generation"],
                                                               state["generation"] + 1)
    assert f"continue it with `neurorun resume={run_dir}`" in err
