"""Signals that end a run the way Ctrl-C does: SIGTERM (SLURM time limits, `docker stop`,
`kill`), SIGUSR1 (SLURM's `--signal=USR1@<seconds>` before a requeue) and SIGHUP (a closed
SSH session or terminal).

Inside `interrupts_on_signals()` each raises `RunInterrupted`, a KeyboardInterrupt, wherever
the main thread is (a signal the process was started ignoring stays ignored: `nohup` keeps a
run alive through SIGHUP); the runner then checkpoints the last finished generation, prints the
resume command, and the command exits with 128 + the signal number (130 for Ctrl-C). Inside
`held()` a signal (Ctrl-C too) waits until the block ends, a second one does not: the runner
logs a finished generation and takes its snapshot there, so what was logged is what gets saved.
Between `hold()` and `release()` signals wait the same way: the command holds them while Hydra
sets a run up, where a KeyboardInterrupt could be raised inside code that only reports it.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

SIGNALS = (signal.SIGTERM, signal.SIGUSR1, signal.SIGHUP)


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


_held: list[int] | None = None  # inside held(): the signal that arrived, if one did


def _raise(signum: int, frame: object) -> None:
    if _held is not None and not _held:  # the first one waits for the block's end
        _held.append(signum)
        return
    raise RunInterrupted(signum)  # outside held(), or asked twice: at once


@contextmanager
def held() -> Iterator[None]:
    """A signal that arrives inside (while `interrupts_on_signals` is on) is raised as the
    block ends, so the block runs whole; a second signal is raised at once (a block stuck in
    a tracker's retries still stops on a second Ctrl-C). When the block raises an error with a
    signal waiting, the signal is raised from that error: the run was asked to stop (the
    error may be its consequence, e.g. a print to a terminal that hung up). Nested, the
    outermost block raises it."""
    global _held
    outer, _held = _held, []
    try:
        yield
    except Exception as error:
        arrived, _held = _held, outer
        if arrived:
            raise RunInterrupted(arrived[0]) from error
        raise
    except BaseException:  # the second signal (or another interrupt): as it is
        _held = outer
        raise
    arrived, _held = _held, outer
    if arrived and outer is not None:
        outer[:] = outer or arrived  # the outer block raises it as it ends
    elif arrived:
        raise RunInterrupted(arrived[0])


def hold() -> None:
    """From here until `release()`, a signal (while `interrupts_on_signals` is on) waits, as
    inside `held()`, for code that cannot be wrapped in one block: Hydra's set-up of a run
    (its run folder, its logging, its saved configs) runs between the command and the task
    function, and a KeyboardInterrupt raised where Python only reports it (a finalizer, a
    weakref callback while logging swaps its handlers) would be lost and the run go on.
    Outside any `held()` block; a no-op while holding already."""
    global _held
    if _held is None:
        _held = []


def release() -> None:
    """Stop `hold()`ing: a signal that waited is raised now; later ones are raised at once."""
    global _held
    arrived, _held = _held, None
    if arrived:
        raise RunInterrupted(arrived[0])


@contextmanager
def interrupts_on_signals() -> Iterator[None]:
    """SIGTERM, SIGUSR1 and SIGHUP raise RunInterrupted while inside, unless ignored, and so
    does Ctrl-C where Python's own handler has it (main thread only: signal handlers cannot be
    set elsewhere, e.g. in a ray actor)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    ours = [number for number in SIGNALS if signal.getsignal(number) is not signal.SIG_IGN]
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        ours.append(signal.SIGINT)
    previous = {number: signal.signal(number, _raise) for number in ours}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
