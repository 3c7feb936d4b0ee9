"""Ctrl-C while the `neurorun` command starts: importing its modules (torch, hydra, ...) takes
seconds, before `cli.main` can catch a KeyboardInterrupt, and Python would print a traceback.
`neurorun.cli` imports this module before any other; until `loaded()` hands Ctrl-C back, it
ends the process with one line and exit status 130, as a later Ctrl-C does.
"""

from __future__ import annotations

import signal
import sys
import threading


def _interrupted(signum: int, frame: object) -> None:
    print("neurorun: interrupted (Ctrl-C)", file=sys.stderr)
    sys.exit(128 + signum)


# only Python's own handler is replaced: a user's handler, or Ctrl-C ignored, stays as it is
_GUARDED = (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler)
if _GUARDED:
    signal.signal(signal.SIGINT, _interrupted)


def loaded() -> None:
    """Ctrl-C raises KeyboardInterrupt again (which `cli.main`, or a user's code, catches)."""
    if _GUARDED and signal.getsignal(signal.SIGINT) is _interrupted:
        signal.signal(signal.SIGINT, signal.default_int_handler)
