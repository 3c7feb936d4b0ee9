"""Ctrl-C while the `neurorun` command starts: importing its modules (torch, hydra, ...) takes
seconds, before `cli.main` can catch a KeyboardInterrupt, and Python would print a traceback.
`neurorun.cli.app` imports this module before any other; until `loaded()` hands Ctrl-C back, it
ends the process with one line and exit status 130, as a later Ctrl-C does. SIGTERM, SIGHUP
and SIGUSR1 (which end a run as Ctrl-C does) likewise say so in one line, where they ended the
process silently. They are watched (`neurorun.loop.signals.watch`): while a module loads in compiled
code for longer than the signal's grace, the watcher ends the process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading

from neurorun.loop.signals import answered, exit_now, said, watch


def _interrupted(signum: int, frame: object) -> None:
    """One line and 128 + the signal number. A console script ends at once: a module may be
    loading inside a C++ call back into Python (torch's), where an exception would abort the
    process, and nothing is written yet. Python code importing neurorun gets SystemExit (its
    `finally` blocks run)."""
    answered()
    program = os.path.basename(sys.argv[0]) if sys.argv else ""
    script = program.startswith("neurorun")  # a console script, not code importing neurorun
    line = f"{program if script else 'neurorun'}: {said(signum)}\n"
    with contextlib.suppress(OSError):  # a terminal that hung up (SIGHUP): the status says why
        os.write(2, line.encode())  # no buffer: a signal may come in the middle of a print
    if script:
        exit_now(128 + signum)
    sys.exit(128 + signum)


# only Python's own handlers are replaced: a user's handler, or a signal ignored, stays as it is
_DEFAULTS = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL,
             signal.SIGHUP: signal.SIG_DFL, signal.SIGUSR1: signal.SIG_DFL}
_GUARDED = ([number for number, default in _DEFAULTS.items()
             if signal.getsignal(number) is default]
            if threading.current_thread() is threading.main_thread() else [])
for _number in _GUARDED:
    signal.signal(_number, _interrupted)
_unwatch = watch(_GUARDED, _interrupted) if _GUARDED else None


def loaded() -> None:
    """Ctrl-C raises KeyboardInterrupt again (which `cli.main`, or a user's code, catches);
    the other signals are Python's defaults again."""
    global _unwatch
    if _unwatch is not None:
        _unwatch()
        _unwatch = None
    for number in _GUARDED:
        if signal.getsignal(number) is _interrupted:
            signal.signal(number, _DEFAULTS[number])
