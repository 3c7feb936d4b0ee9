"""`deferred_signals()`: a signal that arrives inside the block ends the run as the block ends,
not in it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from neurorun.loop.signals import (
    RunInterrupted,
    deferred_signals,
    exit_status,
    interrupts_on_signals,
)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGUSR1])
def test_a_deferred_signal_is_raised_as_the_block_ends(signum):
    done = []
    with pytest.raises(RunInterrupted) as raised, interrupts_on_signals(), deferred_signals():
        os.kill(os.getpid(), signum)
        done.append("after the signal")
    assert done == ["after the signal"]
    assert raised.value.signum == signum and exit_status(raised.value) == 128 + signum


def test_outside_the_block_a_signal_stops_at_once_and_the_handlers_come_back():
    before = signal.getsignal(signal.SIGTERM)
    done = []
    with pytest.raises(RunInterrupted), interrupts_on_signals():
        with deferred_signals():
            pass
        os.kill(os.getpid(), signal.SIGTERM)
        done.append("after the signal")
    assert done == []
    assert signal.getsignal(signal.SIGTERM) is before
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_an_error_inside_the_block_with_a_signal_waiting_raises_the_signal_from_it():
    """The run was asked to stop; the error (a print to a terminal that hung up, say) is its
    cause, kept."""
    with pytest.raises(RunInterrupted) as raised, interrupts_on_signals(), deferred_signals():
        os.kill(os.getpid(), signal.SIGHUP)
        raise OSError(5, "Input/output error")
    assert raised.value.signum == signal.SIGHUP
    assert isinstance(raised.value.__cause__, OSError)
    with pytest.raises(ZeroDivisionError), interrupts_on_signals(), deferred_signals():  # no signal
        raise ZeroDivisionError
    with interrupts_on_signals(), deferred_signals():  # nothing left over
        pass


def test_a_second_signal_inside_the_block_stops_at_once():
    """A block stuck (a tracker retrying against a server that went away) still stops on a
    second Ctrl-C or SIGTERM."""
    done = []
    with pytest.raises(RunInterrupted) as raised, interrupts_on_signals(), deferred_signals():
        os.kill(os.getpid(), signal.SIGINT)
        done.append("after the first")
        os.kill(os.getpid(), signal.SIGTERM)
        done.append("after the second")
    assert done == ["after the first"] and raised.value.signum == signal.SIGTERM
    with interrupts_on_signals(), deferred_signals():  # nothing left over
        pass


def test_nested_blocks_raise_the_signal_as_the_outermost_ends():
    done = []
    with pytest.raises(RunInterrupted) as raised, interrupts_on_signals(), deferred_signals():
        with deferred_signals():
            os.kill(os.getpid(), signal.SIGUSR1)
        done.append("rest of the outer block")
    assert done == ["rest of the outer block"] and raised.value.signum == signal.SIGUSR1


# ----- a main thread stuck in compiled code -----
STUCK = """
import ctypes, sys
from neurorun.loop import signals
signals.GRACE_S = {grace}
mutex = ctypes.create_string_buffer(64)  # zeroed: a default (non-recursive) pthread mutex
libc = ctypes.CDLL(None)
libc.pthread_mutex_lock(mutex)
with signals.interrupts_on_signals(patient={patient}):
    {inside}
    print("stuck", flush=True)
    libc.pthread_mutex_lock(mutex)  # locked already: waits for ever, signals or not
"""


def _stuck(grace: float, patient: bool, inside: str = "pass") -> subprocess.Popen:
    """A Python process whose main thread waits for ever in C (as jax making a million devices
    did), where Python never runs a signal handler; ``inside``: a line it runs first."""
    process = subprocess.Popen([sys.executable, "-c", STUCK.format(grace=grace,
                                                                   patient=patient,
                                                                   inside=inside)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout.readline() == "stuck\n"
    time.sleep(0.5)  # into the C call
    return process


def test_a_signal_the_stuck_main_thread_never_answers_still_ends_the_process():
    process = _stuck(grace=2, patient=False)
    try:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 128 + signal.SIGTERM
    assert err == ("neurorun: stopped by SIGTERM; the run did not answer it within 2 s (busy "
                   "outside Python), so it ends now\n")


def test_a_patient_block_waits_for_the_first_signal_and_ends_on_the_second():
    """The runner's loop: what it saves once it takes the signal is worth the wait (a long
    compiled evaluation); a second signal not answered ends it."""
    process = _stuck(grace=1, patient=True)
    try:
        process.send_signal(signal.SIGUSR1)
        with pytest.raises(subprocess.TimeoutExpired):
            process.wait(timeout=4)  # 4 x the grace: still waiting
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 128 + signal.SIGTERM
    assert err.startswith("neurorun: stopped by SIGTERM; the run did not answer it within 1 s")


def test_a_signal_whose_handler_another_library_replaced_is_not_watched():
    """ray's driver sets its own SIGTERM handler, which cannot say it answered: the process
    is left to it."""
    process = _stuck(grace=1, patient=False,
                     inside="signals.signal.signal(signals.signal.SIGTERM, lambda *_: None)")
    try:
        process.send_signal(signal.SIGTERM)
        with pytest.raises(subprocess.TimeoutExpired):
            process.wait(timeout=4)  # 4 x the grace: not ended by the watcher
    finally:
        process.kill()
        process.communicate()


def test_an_answered_signal_is_raised_as_before_and_a_forked_child_is_not_watched():
    """The handler ran: the watcher stays quiet (its line never printed, the process not ended
    by it); a forked child's signals are its own."""
    code = """
import os, signal, sys, time
from neurorun.loop import signals
signals.GRACE_S = 0.5
with signals.interrupts_on_signals():
    child = os.fork()
    if child == 0:  # SIGUSR1 at its default ends the child, not a byte in the parent's pipe
        signal.signal(signal.SIGUSR1, lambda *_: None)
        os.kill(os.getpid(), signal.SIGUSR1)
        os._exit(0)
    os.waitpid(child, 0)
    time.sleep(2)  # the watcher would end the process here
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(2)
    except KeyboardInterrupt as error:
        print("raised", error.signum, flush=True)
time.sleep(2)
print("went on", flush=True)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"raised {int(signal.SIGTERM)}\nwent on\n" and done.stderr == ""


def test_more_signals_while_the_run_stops_wait_for_its_clean_up(monkeypatch):
    """Three quick SIGTERMs: the second and third cut the saving of the state short. For
    GRACE_S after a signal is raised, later ones wait; after it, one is raised again (a
    clean-up stuck in Python still stops)."""
    saved = []
    with pytest.raises(RunInterrupted) as raised, interrupts_on_signals():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
        finally:
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGTERM)
            saved.append("the state")
    assert saved == ["the state"] and raised.value.signum == signal.SIGTERM
    monkeypatch.setattr("neurorun.loop.signals.GRACE_S", 0.0)
    with pytest.raises(RunInterrupted) as raised, interrupts_on_signals():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
        finally:
            os.kill(os.getpid(), signal.SIGUSR1)
            saved.append("not reached")
    assert raised.value.signum == signal.SIGUSR1 and saved == ["the state"]
