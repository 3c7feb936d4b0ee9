"""Signals that end a run the way Ctrl-C does: SIGTERM (SLURM time limits, `docker stop`,
`kill`), SIGUSR1 (SLURM's `--signal=USR1@<seconds>` before a requeue) and SIGHUP (a closed
SSH session or terminal).

Inside `interrupts_on_signals()` each raises `RunInterrupted`, a KeyboardInterrupt, wherever
the main thread is (a signal the process was started ignoring stays ignored: `nohup` keeps a
run alive through SIGHUP); the runner then checkpoints the last finished generation, prints the
resume command, and the command exits with 128 + the signal number (130 for Ctrl-C).
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
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum


def exit_status(error: KeyboardInterrupt) -> int:
    """128 + the signal number: 130 for Ctrl-C, 143 for SIGTERM, 138 for SIGUSR1, 129 for
    SIGHUP."""
    return 128 + getattr(error, "signum", signal.SIGINT)


def _raise(signum: int, frame: object) -> None:
    raise RunInterrupted(signum)


@contextmanager
def interrupts_on_signals() -> Iterator[None]:
    """SIGTERM, SIGUSR1 and SIGHUP raise RunInterrupted while inside, unless ignored (main
    thread only: signal handlers cannot be set elsewhere, e.g. in a ray actor)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {number: signal.signal(number, _raise) for number in SIGNALS
                if signal.getsignal(number) is not signal.SIG_IGN}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
