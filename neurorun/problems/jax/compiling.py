"""Compiling the evaluation's jax programs, said as it happens.

A physics program takes seconds to minutes to compile on a CPU, so each one says what it
compiles (the env, the batch, the devices), how long it took the last time (a record of
``neurorun-compiles.json`` beside jax's compilation cache, plain JSON data) and, once done,
whether it was compiled or loaded from jax's cache. While it compiles, a line every
``HEARTBEAT_SECONDS`` says it is still going, or warns that the process has used no CPU
(stuck). The console's progress bar shows each record's ``activity`` (``ConsoleLogger``).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from neurorun.common.atomic import atomic_write_text
from neurorun.common.errors import one_line
from neurorun.common.files import read_bounded

log = logging.getLogger(__name__)
RECORD = "neurorun-compiles.json"  # in jax's cache folder (jax reads only its *-cache files)
RECORD_ENTRIES = 200  # the most recent programs the record keeps
RECORD_BYTES = 1 << 20  # a record of RECORD_ENTRIES programs holds about 60 KB
HEARTBEAT_SECONDS = 30  # a compile says it is still going this often
IDLE_SHARE = 0.05  # less CPU than this share of a heartbeat's wall time: nothing runs
_RUNNING: set[threading.Thread] = set()  # the compile threads that have not ended
_COMPILING = threading.Semaphore(0)  # released once per program compiling now: its own
# watch speaks, not its caller's


@contextlib.contextmanager
def watched(what: str, every: float, *, heartbeat: str | None = None) -> Iterator[None]:
    """Say every ``every`` seconds that ``what`` still runs (``heartbeat``: an INFO line with
    the seconds so far, else a warning, not while a program compiles inside it); warn instead
    when the process used no CPU in that time: a compile or an evaluation that stalls is
    visible, not silent."""
    done = threading.Event()
    started = time.perf_counter()

    def watch() -> None:
        cpu = time.process_time()
        while not done.wait(every):
            used, cpu = time.process_time() - cpu, time.process_time()
            seconds = time.perf_counter() - started
            if used < IDLE_SHARE * every:
                log.warning("%s: still running after %.0f s and no CPU in use for the last "
                            "%.0f s: it looks stuck. Stop it with Ctrl-C and report the env, "
                            "batch and device count", what, seconds, every)
            elif heartbeat is not None:
                log.info("%s: %.0f s so far%s", what, seconds, heartbeat)
            elif not _compiling():
                log.warning("%s: still running after %.0f s", what, seconds)

    thread = threading.Thread(target=watch, name="neurorun-watch", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()


def compiles_running() -> bool:
    """Whether a compile thread of this process is still running (one a stopped run left)."""
    return any(thread.is_alive() for thread in list(_RUNNING))


def wait_for_compiles() -> None:
    """Wait for every compile thread of this process to end (a program compiled ahead and not
    called: the interpreter's exit would stop it inside XLA)."""
    for thread in list(_RUNNING):
        thread.join()


def _compiling() -> bool:
    """Whether some program compiles now."""
    if _COMPILING.acquire(blocking=False):
        _COMPILING.release()
        return True
    return False


class _CacheHits:
    """What jax's persistent cache said about the last program loaded in this thread: the
    seconds its compile took when it was written (jax keeps them with the entry)."""

    def __init__(self) -> None:
        self.local = threading.local()
        self.listening = False

    def listen(self) -> None:
        if not self.listening:
            import jax.monitoring

            jax.monitoring.register_event_duration_secs_listener(self._event)
            self.listening = True

    def _event(self, event: str, duration: float, **_: Any) -> None:
        if event == "/jax/compilation_cache/compile_time_saved_sec":
            self.local.saved = duration
        elif event == "/jax/compilation_cache/cache_retrieval_time_sec":
            self.local.retrieval = duration

    def take(self) -> float | None:
        """The original compile seconds of the program just loaded from the cache (None: it
        was compiled)."""
        saved, retrieval = getattr(self.local, "saved", None), getattr(self.local, "retrieval", 0)
        self.local.saved = None
        return None if saved is None else saved + retrieval


_HITS = _CacheHits()


class Program:
    """A jitted program, lowered and compiled on a thread of its own: at its first call, or
    ahead of it (``compile_ahead``: jax's compiler leaves the other core to this one). The
    caller waits for the thread where Python answers a signal at once (XLA's compiler would
    hold the main thread for minutes); a process that stops leaves it behind
    (``compiles_running``). A ``label``led one (the physics programs) says what it compiles
    (``description``), how long it took last time, and how long it took now or that jax's
    cache had it."""

    def __init__(self, function: Any, label: str | None = None, description: str = ""):
        self.function = function  # the jitted function: traceable, whatever is compiled
        self.label, self.description = label, description
        self._executable: Any = None  # the compiled program, once compiled
        self.ready = False
        self.seconds = 0.0  # compiling or loading it took
        self._ahead: threading.Thread | None = None
        self._failed: BaseException | None = None

    def __call__(self, *args: Any) -> Any:
        if not self.ready:
            self.compile_ahead(*args)
        if self._ahead is not None:
            self._ahead.join()
            self._ahead = None
            if self._failed is not None:
                raise self._failed
        return self._executable(*args)

    def compile_ahead(self, *shapes: Any) -> None:
        """Start compiling for arguments of these shapes (``jax.ShapeDtypeStruct``s with their
        shardings, or the arguments themselves) on a thread; a call waits for it."""
        if self.ready or self._ahead is not None:
            return
        self._failed = None

        def compile_now() -> None:
            try:
                self._compile(shapes)
            except BaseException as error:  # said where the program is called
                self._failed = error
            finally:
                _RUNNING.discard(threading.current_thread())

        self._ahead = threading.Thread(target=compile_now, name="neurorun-compile",
                                       daemon=True)
        _RUNNING.add(self._ahead)
        self._ahead.start()

    def _compile(self, args: tuple) -> None:
        started = time.perf_counter()
        if self.label is None:
            self._executable = self.function.lower(*args).compile()
            self.seconds, self.ready = time.perf_counter() - started, True
            return
        _HITS.listen()
        before = _recorded(self.label)
        last = "" if before is None else f" (it took {before:.0f} s last time)"
        log.info("compiling %s%s, once per shape...", self.description, last,
                 extra={"activity": f"compiling {self.description}"})
        _COMPILING.release()
        try:
            with watched(f"compiling {self.description}", HEARTBEAT_SECONDS, heartbeat=last):
                self._executable = self.function.lower(*args).compile()
        finally:
            _COMPILING.acquire()
        self.seconds, self.ready = time.perf_counter() - started, True
        original = _HITS.take()
        if original is None:
            log.info("compiled %s in %.0f s", self.description, self.seconds,
                     extra={"activity": None})
            _record(self.label, self.seconds)
        else:
            log.info("loaded %s from jax's compilation cache in %.1f s (compiling it took "
                     "%.0f s)", self.description, self.seconds, original,
                     extra={"activity": None})


_SAID: set[str] = set()  # the cache and record errors said in this process (once each kind)


class _CacheErrors(logging.Handler):
    """jax's warnings about its persistent cache (an entry it could not read, e.g. corrupt, or
    not write, e.g. a full disk), which a run routes to its log as ``py.warnings`` records
    (``loggers.console.route_warning``), as one neurorun line per kind and process: jax goes
    on, compiling what it cannot load."""

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        for kind in ("reading", "writing"):
            start = text.find(f"Error {kind} persistent compilation cache entry")
            if start >= 0 and kind not in _SAID:
                _SAID.add(kind)
                log.warning("jax's compilation cache: an error %s an entry (%s); the run goes "
                            "on, compiling what it cannot load. Fix: remove the cache folder's "
                            "entries (jax makes them again)", kind,
                            one_line(text[start:]))


logging.getLogger("py.warnings").addHandler(_CacheErrors())


def _record_path() -> Path | None:
    import jax

    folder = jax.config.jax_compilation_cache_dir
    usable = folder and jax.config.jax_enable_compilation_cache  # else refused: not ours
    return Path(folder) / RECORD if usable else None


def _read_record(path: Path) -> dict[str, Any]:
    """The record's entries, or none: a record that is not a regular file of at most
    ``RECORD_BYTES`` holding a JSON object is ignored (said once a process), never a failure:
    it only says how long compiles took."""
    try:
        entries = json.loads(read_bounded(path, RECORD_BYTES))
        if isinstance(entries, dict):
            return entries
        problem = "not a JSON object"
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, RecursionError) as error:  # a FIFO, too large, not JSON, deep
        problem = one_line(error)
    if "record" not in _SAID:
        _SAID.add("record")
        log.warning("the record of compile times %s is not used (%s); compiles are not timed "
                    "against the last ones. Fix: remove it (neurorun writes it anew)",
                    str(path), problem)
    return {}


def _recorded(label: str) -> float | None:
    """The seconds ``label``'s last compile took, from the record (None: none recorded)."""
    path = _record_path()
    entry = _read_record(path).get(label) if path else None
    try:
        return float(entry["seconds"]) if isinstance(entry, dict) else None
    except (TypeError, KeyError, ValueError, ArithmeticError):
        return None


def _record(label: str, seconds: float) -> None:
    """Keep ``label``'s compile seconds in the record (written whole, replacing it), the
    ``RECORD_ENTRIES`` most recent; a folder that cannot be written, or a record that is not a
    regular file (a FIFO, a link to a device), keeps none."""
    path = _record_path()
    if path is None or (path.exists() and not path.is_file()) or path.is_symlink():
        return
    entries = _read_record(path)
    entries.pop(label, None)
    entries[label] = {"seconds": round(seconds, 1),
                      "date": dt.datetime.now().isoformat(timespec="seconds")}
    kept = dict(list(entries.items())[-RECORD_ENTRIES:])
    with contextlib.suppress(OSError):
        atomic_write_text(json.dumps(kept, indent=1), path)
