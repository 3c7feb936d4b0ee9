"""Signals that end a run the way Ctrl-C does: SIGTERM (SLURM time limits, `docker stop`,
`kill`), SIGUSR1 (SLURM's `--signal=USR1@<seconds>` before a requeue) and SIGHUP (a closed
SSH session or terminal).

Inside `interrupts_on_signals()` each raises `RunInterrupted`, a KeyboardInterrupt, wherever
the main thread is (a signal the process was started ignoring stays ignored: `nohup` keeps a
run alive through SIGHUP); the runner then checkpoints the last finished generation, prints the
resume command, and the command exits with 128 + the signal number (130 for Ctrl-C). Inside
`deferred_signals()` a signal (Ctrl-C too) waits until the block ends, a second one does not:
the runner logs a finished generation and takes its snapshot there, so what was logged is what
gets saved. Between `defer_signals()` and `stop_deferring_signals()` signals wait the same way:
the command defers them while Hydra sets a run up, where a KeyboardInterrupt could be raised
inside code that only reports it.

Python runs a signal's handler only between bytecodes of the main thread, so a main thread
stuck in compiled code (jax making its devices, XLA compiling, a C library waiting) would let a
signal wait for ever. `watch()` (which `interrupts_on_signals` and `neurorun.cli.startup` call) has
a thread read the signals from Python's wakeup fd: one the main thread has not answered (its
handler has not run) within `GRACE_S` seconds ends the process with one line and 128 + the
signal number, saving nothing more. A patient block (the runner's loop, which saves the last
finished generation once it takes a signal) waits for the main thread however long it is busy,
and only a second signal is ended that way. Once a signal is raised the run is stopping: for
GRACE_S more signals wait for its clean-up (its state saved, its loggers closed), and a command
that exits on it ignores them from there to its end, so it ends with the first one's status.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from typing import Any

SIGNALS = (signal.SIGTERM, signal.SIGUSR1, signal.SIGHUP)
GRACE_S = 5.0  # how long a signal waits for the main thread before it ends the process


class RunInterrupted(KeyboardInterrupt):
    """A signal asked the run to stop; ``signum`` says which."""

    def __init__(self, signum: int):
        super().__init__(said(signum))
        self.signum = signum


def said(signum: int) -> str:
    """What ended the command, in words."""
    return ("interrupted (Ctrl-C)" if signum == signal.SIGINT
            else f"stopped by {signal.Signals(signum).name}")


def exit_status(error: KeyboardInterrupt) -> int:
    """128 + the signal number: 130 for Ctrl-C, 143 for SIGTERM, 138 for SIGUSR1, 129 for
    SIGHUP."""
    return 128 + getattr(error, "signum", signal.SIGINT)


_deferred: list[int] | None = None  # inside deferred_signals(): the signal that arrived, if one did
_stopping_since: float | None = None  # when a signal was raised: the run is stopping
_depth = 0  # interrupts_on_signals blocks entered


def _raise(signum: int, frame: object) -> None:
    answered()
    if _stopping_since is not None and time.monotonic() - _stopping_since < GRACE_S:
        return  # stopping already: the state is saved and the loggers closed first
    if _deferred is not None and not _deferred:  # the first one waits for the block's end
        _deferred.append(signum)
        return
    raise _stop(signum)  # outside deferred_signals(), or asked twice: at once


def _stop(signum: int) -> RunInterrupted:
    """The interrupt to raise; from now on, for GRACE_S, more signals wait for the run's
    clean-up (three quick SIGTERMs cut the saving of its state short)."""
    global _stopping_since
    _stopping_since = time.monotonic()
    return RunInterrupted(signum)


@contextmanager
def deferred_signals() -> Iterator[None]:
    """A signal that arrives inside (while `interrupts_on_signals` is on) is raised as the
    block ends, so the block runs whole; a second signal is raised at once (a block stuck in
    a tracker's retries still stops on a second Ctrl-C). When the block raises an error with a
    signal waiting, the signal is raised from that error: the run was asked to stop (the
    error may be its consequence, e.g. a print to a terminal that hung up). Nested, the
    outermost block raises it."""
    global _deferred
    outer, _deferred = _deferred, []
    try:
        yield
    except Exception as error:
        arrived, _deferred = _deferred, outer
        if arrived:
            raise _stop(arrived[0]) from error
        raise
    except BaseException:  # the second signal (or another interrupt): as it is
        _deferred = outer
        raise
    arrived, _deferred = _deferred, outer
    if arrived and outer is not None:
        outer[:] = outer or arrived  # the outer block raises it as it ends
    elif arrived:
        raise _stop(arrived[0])


def defer_signals() -> None:
    """From here until `stop_deferring_signals()`, a signal (while `interrupts_on_signals` is on)
    waits, as inside `deferred_signals()`, for code that cannot be wrapped in one block:
    Hydra's set-up of a run (its run folder, its logging, its saved configs) runs between the
    command and the task function, and a KeyboardInterrupt raised where Python only reports it
    (a finalizer, a weakref callback while logging swaps its handlers) would be lost and the
    run go on. Outside any `deferred_signals()` block; a no-op while deferring already."""
    global _deferred
    if _deferred is None:
        _deferred = []


def stop_deferring_signals() -> None:
    """Stop deferring: a signal that waited is raised now; later ones are raised at once."""
    global _deferred
    arrived, _deferred = _deferred, None
    if arrived:
        raise _stop(arrived[0])


@contextmanager
def interrupts_on_signals(*, patient: bool = False) -> Iterator[None]:
    """SIGTERM, SIGUSR1 and SIGHUP raise RunInterrupted while inside, unless ignored, and so
    does Ctrl-C where Python's own handler has it (main thread only: signal handlers cannot be
    set elsewhere, e.g. in a ray actor). They are watched (`watch`): one the main thread does
    not answer within GRACE_S ends the process; ``patient``: only a second one does."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    ours = [number for number in SIGNALS if signal.getsignal(number) is not signal.SIG_IGN]
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        ours.append(signal.SIGINT)
    global _depth, _stopping_since
    previous = {number: signal.signal(number, _raise) for number in ours}
    unwatch = watch(ours, _raise, patient=patient)
    _depth += 1
    exiting = False
    try:
        yield
    except SystemExit:  # the process ends with the status it chose: later signals are ignored
        exiting = _stopping_since is not None
        raise
    finally:
        _depth -= 1
        unwatch()
        for number, handler in previous.items():
            signal.signal(number, signal.SIG_IGN if exiting and not _depth else handler)
        if not _depth:
            _stopping_since = None


# ----- signals the main thread does not answer -----
_answered = -float("inf")  # when the main thread last ran a handler of ours (time.monotonic)
_SLACK_S = 1.0  # a handler this long before the watcher read a signal may have answered it
_watching: list[tuple[frozenset[int], Any, bool]] = []  # watch()'s arguments, innermost last
_pipe: list[int] = []  # the wakeup fd's pipe (read end, write end), made once per process


def answered() -> None:
    """The main thread ran a handler of a watched signal (a handler calls it first)."""
    global _answered
    _answered = time.monotonic()


def watch(signums: Collection[int], handler: Any, *,
          patient: bool = False) -> Callable[[], None]:
    """End the process when one of ``signums`` is not answered within GRACE_S (a patient
    watch: a second one), until the function returned is called (main thread only).
    ``handler``, which calls `answered()`, is theirs: a signal whose handler another library
    replaced (ray's driver sets its own for SIGTERM) is not watched, since it cannot answer."""
    if not _pipe:
        _pipe.extend(os.pipe())
        os.set_blocking(_pipe[1], False)  # set_wakeup_fd's rule: a signal never blocks
        threading.Thread(target=_watcher, args=(_pipe[0],), name="neurorun-signals",
                         daemon=True).start()
    previous = signal.set_wakeup_fd(_pipe[1], warn_on_full_buffer=False)
    _watching.append((frozenset(signums), handler, patient))

    def unwatch() -> None:
        if _watching:  # a forked child forgot them
            _watching.pop()
            signal.set_wakeup_fd(previous)

    return unwatch


def _watcher(read_end: int) -> None:
    waiting: list[tuple[float, int]] = []  # (when read, signal) not answered yet
    timeout = None
    while True:
        ready = select.select([read_end], [], [], timeout)[0]
        signums, handler, patient = _watching[-1] if _watching else (frozenset(), None, False)
        if ready:
            now = time.monotonic()
            waiting += [(now, signum) for signum in os.read(read_end, 512) if signum in signums]
        waiting = [(when, signum) for when, signum in waiting if when - _SLACK_S > _answered
                   and signum in signums and signal.getsignal(signum) is handler]
        due = waiting[1:] if patient else waiting
        timeout = due[0][0] + GRACE_S - time.monotonic() if due else None
        if timeout is not None and timeout <= 0:
            _end(due[0][1])


def exit_now(status: int) -> None:
    """End the process with ``status`` once stdout and stderr are flushed, past the
    interpreter's exit: XLA's threads (a compile, a program jax dispatched ahead) may still run
    in C++, and the exit would stop them mid-call ("terminate called", status 134), or a Ctrl-C
    would land in a library's exit callback ("Exception ignored")."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):  # None: started with >&-
            stream.flush()
    os._exit(status)


def _end(signum: int) -> None:
    """One line and 128 + the signal number, from the watcher: the main thread is stuck, so
    neither its handlers nor its clean-up can run."""
    line = (f"neurorun: {said(signum)}; the run did not answer it within {GRACE_S:g} s (busy "
            "outside Python), so it ends now\n")
    try:
        os.write(2, line.encode())
    finally:
        os._exit(128 + signum)


def _forget_in_child() -> None:
    """A forked child (an env worker) has no watcher thread: its signals are its own, not
    bytes in its parent's pipe."""
    if not _pipe:
        return
    with contextlib.suppress(ValueError):  # forked from another thread than the main one
        previous = signal.set_wakeup_fd(-1)
        if previous != _pipe[1]:
            signal.set_wakeup_fd(previous)  # another's, kept
    for end in _pipe:
        os.close(end)
    _pipe.clear()
    _watching.clear()


os.register_at_fork(after_in_child=_forget_in_child)
