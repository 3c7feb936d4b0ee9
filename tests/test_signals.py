"""`held()`: a signal that arrives inside the block ends the run as the block ends, not in it."""

from __future__ import annotations

import os
import signal

import pytest

from neurorun.signals import RunInterrupted, exit_status, held, interrupts_on_signals


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGUSR1])
def test_a_signal_inside_held_is_raised_as_the_block_ends(signum):
    done = []
    with pytest.raises(RunInterrupted) as raised, interrupts_on_signals(), held():
        os.kill(os.getpid(), signum)
        done.append("after the signal")
    assert done == ["after the signal"]
    assert raised.value.signum == signum and exit_status(raised.value) == 128 + signum


def test_outside_held_a_signal_stops_at_once_and_the_handlers_come_back():
    before = signal.getsignal(signal.SIGTERM)
    done = []
    with pytest.raises(RunInterrupted), interrupts_on_signals():
        with held():
            pass
        os.kill(os.getpid(), signal.SIGTERM)
        done.append("after the signal")
    assert done == []
    assert signal.getsignal(signal.SIGTERM) is before
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_an_error_inside_held_with_a_signal_waiting_raises_the_signal_from_it():
    """The run was asked to stop; the error (a print to a terminal that hung up, say) is its
    cause, kept."""
    with pytest.raises(RunInterrupted) as raised, interrupts_on_signals(), held():
        os.kill(os.getpid(), signal.SIGHUP)
        raise OSError(5, "Input/output error")
    assert raised.value.signum == signal.SIGHUP
    assert isinstance(raised.value.__cause__, OSError)
    with pytest.raises(ZeroDivisionError), interrupts_on_signals(), held():  # no signal
        raise ZeroDivisionError
    with interrupts_on_signals(), held():  # nothing left over
        pass


def test_a_second_signal_inside_held_stops_at_once():
    """A block stuck (a tracker retrying against a server that went away) still stops on a
    second Ctrl-C or SIGTERM."""
    done = []
    with pytest.raises(RunInterrupted) as raised, interrupts_on_signals(), held():
        os.kill(os.getpid(), signal.SIGINT)
        done.append("after the first")
        os.kill(os.getpid(), signal.SIGTERM)
        done.append("after the second")
    assert done == ["after the first"] and raised.value.signum == signal.SIGTERM
    with interrupts_on_signals(), held():  # nothing left over
        pass


def test_nested_held_blocks_raise_the_signal_as_the_outermost_ends():
    done = []
    with pytest.raises(RunInterrupted) as raised, interrupts_on_signals(), held():
        with held():
            os.kill(os.getpid(), signal.SIGUSR1)
        done.append("rest of the outer block")
    assert done == ["rest of the outer block"] and raised.value.signum == signal.SIGUSR1
