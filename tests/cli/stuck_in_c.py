"""A Hydra callback for the signal tests: as the job starts (``on_job_start``, while the command
defers signals for Hydra's set-up) the main thread waits for ever inside a C call, where Python
never runs a signal handler, as it did while jax made a million host devices."""

from __future__ import annotations

import ctypes
import sys

from hydra.experimental.callback import Callback

from neurorun.loop import signals


class StuckInC(Callback):
    def on_job_start(self, config, **kwargs) -> None:
        signals.GRACE_S = 1  # the test's wait
        mutex = ctypes.create_string_buffer(64)  # zeroed: a default (non-recursive) mutex
        libc = ctypes.CDLL(None)
        libc.pthread_mutex_lock(mutex)
        print("stuck", file=sys.stderr, flush=True)
        libc.pthread_mutex_lock(mutex)  # locked already: waits for ever
