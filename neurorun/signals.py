"""Signals that end a run the way Ctrl-C does: SIGTERM (SLURM time limits, `docker stop`,
`kill`) and SIGUSR1 (SLURM's `--signal=USR1@<seconds>` before a requeue).

Inside `interrupts_on_signals()` both raise `RunInterrupted`, a KeyboardInterrupt, wherever
the main thread is; the runner then checkpoints the last finished generation, prints the
resume command, and the command exits with 128 + the signal number (130 for Ctrl-C).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

SIGNALS = (signal.SIGTERM, signal.SIGUSR1)


class RunInterrupted(KeyboardInterrupt):
    """A signal asked the run to stop; ``signum`` says which."""

    def __init__(self, signum: int):
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum


def exit_status(error: KeyboardInterrupt) -> int:
    """128 + the signal number: 130 for Ctrl-C, 143 for SIGTERM, 138 for SIGUSR1."""
    return 128 + getattr(error, "signum", signal.SIGINT)


def _raise(signum: int, frame: object) -> None:
    raise RunInterrupted(signum)


@contextmanager
def interrupts_on_signals() -> Iterator[None]:
    """SIGTERM and SIGUSR1 raise RunInterrupted while inside (main thread only: signal
    handlers cannot be set elsewhere, e.g. in a ray actor)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {number: signal.signal(number, _raise) for number in SIGNALS}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
