"""A Hydra callback for the signal tests: as Hydra sets a job up (``on_job_start``, after it
made the run folder, configured logging and saved the configs), Ctrl-C arrives where a
KeyboardInterrupt cannot get out, as in a finalizer or a weakref callback (which Python only
reports), so that code swallows it."""

from __future__ import annotations

import os
import signal
import time

from hydra.experimental.callback import Callback

TARGET = "tests.cli.swallowed_interrupt.SwallowsCtrlC"


class SwallowsCtrlC(Callback):
    def on_job_start(self, config, **kwargs) -> None:
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)  # the handler runs in here
        except KeyboardInterrupt:
            pass
