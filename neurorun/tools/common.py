"""What every tool shares: one-line errors, atomic outputs, mean and std."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from neurorun.common.atomic import atomic_write
from neurorun.common.errors import one_line
from neurorun.common.extras import MissingExtraError
from neurorun.common.files import NotRegularFileError, entry_kind, open_regular
from neurorun.common.streams import replace_unencodable
from neurorun.record.layout import (
    BEST_POLICY,
    CHECKPOINT_DIR,
    HYDRA_DIR,
    LAST_POLICY,
    LOCK_FILE,
    LOG_FILE,
    METRIC_FILES,
    STATE_FILE,
    SWEEP_RECORD,
)
from neurorun.record.run_folder import holds_run

EXIT_BAD_INPUT = 2


class ToolError(Exception):
    """Bad input for a tool: the message is the whole story, shown as one line."""


class _Stdout:
    """sys.stdout while a tool runs: a write that fails (a full disk, a closed pipe) is a
    ToolError, told apart from the tool's other OSErrors (which stay tracebacks)."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream if stream is not None else _Closed()  # None: started with >&-

    def write(self, text: str) -> int:
        return self._do(self.stream.write, text)

    def flush(self) -> None:
        self._do(self.stream.flush)

    def _do(self, action: Callable[..., Any], *args: Any) -> Any:
        try:
            return action(*args)
        except OSError as error:
            _silence(self.stream)
            raise ToolError(f"cannot write to stdout: {error.strerror or error}; the output is "
                            "incomplete: send it to a file or pipe that takes it") from error

    def __getattr__(self, name: str) -> Any:  # isatty, encoding, fileno ... as the stream's
        return getattr(self.stream, name)


class _Closed:
    """The stdout of a process started without one (``>&-``): every use fails as the OS says."""

    def write(self, *args: Any) -> Any:
        raise OSError(errno.EBADF, "stdout is closed")

    flush = fileno = write

    def isatty(self) -> bool:
        return False


def _silence(stream: Any) -> None:
    """Point a failed stdout at /dev/null: Python's flush at exit would fail again, loudly."""
    try:
        descriptor = stream.fileno()
    except (OSError, ValueError, AttributeError):
        return
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, descriptor)
    os.close(null)


def _one_line_warning(message: Any, category: type[Warning], filename: str, lineno: int,
                      file: Any = None, line: str | None = None) -> None:
    print(f"warning: {message}", file=sys.stderr if file is None else file)


_INTERRUPTED: list[int] = []  # Ctrl-C's taken while a tool runs (one may have been swallowed)


def _interrupt(signum: int, frame: object) -> None:
    _INTERRUPTED.append(signum)
    raise KeyboardInterrupt


def _unraisable(hook: Callable[[Any], None]) -> Callable[[Any], None]:
    """``hook`` but for a Ctrl-C raised in a callback: taken quietly, for
    ``check_interrupted``, instead of an "Exception ignored" traceback."""
    def quiet(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            _INTERRUPTED.append(signal.SIGINT)
        else:
            hook(unraisable)

    return quiet


def check_interrupted() -> None:
    """Raise KeyboardInterrupt where a Ctrl-C came and was swallowed: raised inside a callback
    (jax's garbage-collection hook, a finalizer), Python only reports it and goes on."""
    if _INTERRUPTED:
        raise KeyboardInterrupt


def run_tool(name: str, body: Callable[[], int | None]) -> int:
    """Run a tool's `body`; bad input (or a missing extra) becomes one line
    `name: error: ...` and exit status 2; Ctrl-C one line and 130, with no output written
    after it (`write_output` checks), even where a callback swallowed it."""
    main = (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is not signal.SIG_IGN)  # kept as the shell set it
    previous = signal.signal(signal.SIGINT, _interrupt) if main else None
    hook, sys.unraisablehook = sys.unraisablehook, _unraisable(sys.unraisablehook)
    _INTERRUPTED.clear()
    with warnings.catch_warnings():
        warnings.showwarning = _one_line_warning
        # brax warns on every import that it is unmaintained: not news to a tool's user.
        warnings.filterwarnings("ignore", category=UserWarning, module=r"brax\.")
        replace_unencodable()
        stdout, sys.stdout = sys.stdout, _Stdout(sys.stdout)
        try:
            status = int(body() or 0)
            check_interrupted()
            sys.stdout.flush()  # a full stdout fails here, not silently at exit
            return status
        except (ToolError, MissingExtraError) as error:
            print(f"{name}: error: {one_line(error, limit=None)}", file=sys.stderr)
            return EXIT_BAD_INPUT
        except KeyboardInterrupt:
            print(f"{name}: interrupted", file=sys.stderr)
            return 130
        finally:
            sys.stdout = stdout
            sys.unraisablehook = hook
            _INTERRUPTED.clear()
            if main:
                signal.signal(signal.SIGINT, previous)


def write_output(path: str | Path, write: Callable[[Path], None], what: str,
                 flag: str = "--out") -> Path:
    """Write an output through a temporary file renamed over `path` (nothing half-written),
    or copied into it where `path` is a device or FIFO (/dev/stdout).

    `write` receives the temporary path, whose suffix is `.tmp`: writers must name the format
    explicitly instead of guessing it from the file name. `flag` is the tool's option for it.
    """
    path = Path(path)
    if path.is_dir():
        raise ToolError(f"{flag} {str(path)!r} is a folder; expected a file name for the {what}")

    def written(temporary: Path) -> None:  # an interrupt before the rename: no file at all
        write(temporary)
        check_interrupted()

    try:
        if is_stream(path):
            _write_into(path, written, flag)
        else:
            atomic_write(path, written)
    except OSError as error:
        raise ToolError(f"cannot write the {what} to {str(path)!r}: {error.strerror or error}; "
                        f"pass a {flag} path in a writable folder") from error
    return path


def is_stream(path: Path) -> bool:
    """Whether ``path`` is written into, never replaced: a device, FIFO or socket, or a name
    under /dev or /proc (``/dev/stdout`` is the shell's regular file under ``> out.csv``)."""
    return path.exists() and (not path.is_file() or
                              path.absolute().parts[1:2] in (("dev",), ("proc",)))


def _write_into(path: Path, write: Callable[[Path], None], flag: str) -> None:
    """Write to a temporary file, then copy its bytes into `path`, a device or FIFO: a rename
    would replace it (run as root, /dev/full became a regular file holding the CSV). Opened
    without blocking: a FIFO that no process reads (or a socket) is a ToolError, not a wait
    for good."""
    with tempfile.TemporaryDirectory() as folder:
        temporary = Path(folder) / f"{path.name}.tmp"
        write(temporary)
        inherited = _standard_stream(path)
        try:
            # this process's own stdout or stderr (/dev/stdout): written at its offset, which a
            # new descriptor would not share (it wrote over a redirected file's start)
            descriptor = (os.dup(inherited) if inherited is not None else
                          os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        except OSError as error:
            if error.errno != errno.ENXIO:
                raise
            kind = entry_kind(path.stat().st_mode)
            unread = " that no process reads" if kind == "a FIFO" else ""
            raise ToolError(f"{flag} {str(path)!r} is {kind}{unread}, not a regular file: "
                            "nothing can be written into it. Fix: start its reader first, or "
                            f"pass a regular file as {flag}") from None
        os.set_blocking(descriptor, True)
        with open(temporary, "rb") as source, open(descriptor, "wb") as target:
            shutil.copyfileobj(source, target)


def _standard_stream(path: Path) -> int | None:
    """1 or 2 where ``path`` is the file this process's stdout or stderr writes to."""
    for stream, number in ((sys.stdout, 1), (sys.stderr, 2)):
        try:
            same = os.path.samestat(os.stat(path), os.fstat(number))
        except OSError:
            continue
        if same:
            with contextlib.suppress(ValueError, AttributeError):  # closed, or None: nothing held
                stream.flush()  # what the tool printed first comes first
            return number
    return None


def open_input(path: Path) -> BinaryIO:
    """``path`` open for reading in binary (``common.files.open_regular``); a FIFO, socket,
    device or folder there is a ToolError naming it."""
    try:
        return open_regular(path)
    except NotRegularFileError as error:
        raise ToolError(f"{error}: the tools read a run's files only from regular files (a "
                        "FIFO would block them). Fix: put the file the run wrote there") from None
    except OSError as error:  # no permission, an I/O error: one line, as a missing file is
        raise ToolError(f"cannot read {str(path)!r} ({error.strerror or error}). Fix: make it "
                        "readable (chmod u+r), or give another run or policy file") from None


def is_input(path: Path) -> bool:
    """Whether ``path`` (followed where it is a link) is there to read: False where nothing
    is, a ToolError where it is not a regular file (:func:`open_input`)."""
    if not path.exists():
        return False
    open_input(path).close()
    return True


def mean_std(values: Sequence[float] | np.ndarray) -> tuple[float, float]:
    """Mean and population standard deviation (ddof=0) of the finite values; nan when none."""
    array = np.asarray(values, dtype=float)
    array = array[np.isfinite(array)]
    if array.size == 0:
        return float("nan"), float("nan")
    return float(array.mean()), float(array.std())


def format_mean_std(mean: float, std: float, digits: int = 2) -> str:
    """``mean ± std``; the mean alone where there is no spread (std nan: one value)."""
    if not np.isfinite(mean):
        return "-"
    return f"{mean:.{digits}f}" + (f" ± {std:.{digits}f}" if np.isfinite(std) else "")


def out_format(path: str | Path) -> str:
    """The format an output file's name asks for: its suffix in lower case (``r.GIF``: .gif)."""
    return Path(path).suffix.lower()


def check_out(path: str | Path, what: str, force: bool, flag: str = "--out") -> None:
    """One line before any work where ``path`` should not be written: a folder, a missing or
    unwritable folder (nothing is made), a run's own file, an existing file without --force.
    A device or FIFO (/dev/stdout) is written into."""
    path = Path(path)
    if is_stream(path) and not path.is_dir():
        if os.access(path, os.W_OK):
            return
        raise ToolError(f"cannot write the {what} to {str(path)!r}: it is not writable; pass "
                        f"a {flag} path in a writable folder")
    folder = path.parent
    if path.is_dir():
        raise ToolError(f"{flag} {str(path)!r} is a folder; pass a file name for the {what}")
    if not folder.exists():
        raise ToolError(f"{flag} {str(path)!r}: the folder {str(folder)!r} does not exist; "
                        f"create it, or pass a {flag} in a folder that exists")
    if not folder.is_dir() or not os.access(folder, os.W_OK):
        raise ToolError(f"cannot write the {what} to {str(path)!r}: {str(folder)!r} is not a "
                        f"writable folder; pass a {flag} path in a writable folder")
    owner = _run_file_owner(path)
    if owner is not None:
        raise ToolError(f"{flag} {str(path)!r} is {owner}, which a resume and the tools read; "
                        f"pass a {flag} outside it")
    if path.exists() and not force:
        raise ToolError(f"{flag} {str(path)!r} exists; pass --force to replace it, or another "
                        f"{flag}")


def _run_file_owner(path: Path) -> str | None:
    """What of a run ``path`` lies in: its checkpoints/ or .hydra/ folder (its saved configs,
    which resume and the tools read), one of the files a run keeps at its top (metrics, log,
    lock), or a sweep's record; None for any other path."""
    folder = path.resolve().parent
    if folder.name == CHECKPOINT_DIR and any(
            (folder / name).exists() for name in (STATE_FILE, f"{BEST_POLICY}.pt",
                                                  f"{LAST_POLICY}.pt")):
        return f"inside a run's {CHECKPOINT_DIR}/ folder"
    hydra = next((p for p in (folder, folder.parent) if p.name == HYDRA_DIR), None)
    if hydra is not None and holds_run(hydra.parent):
        return f"inside a run's {HYDRA_DIR}/ folder (its saved configs)"
    if path.name in (*METRIC_FILES, LOG_FILE, LOCK_FILE) and holds_run(folder):
        return f"a run's own {path.name}"
    if path.name == SWEEP_RECORD and path.is_file():
        return f"a sweep's {SWEEP_RECORD}"
    return None


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (--max-steps 0 would play 1-step episodes)."""
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: expected an integer >= 1")
    return value


MAX_SEED = 2**63 - 1  # episode seeds are int64 (numpy's, EnvPool's), as a run's seed is


def seed_int(text: str) -> int:
    """argparse type: a seed from 0 to MAX_SEED (-1 and 2**64 failed inside the env)."""
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"{value}: expected an integer from 0 to {MAX_SEED}")
    return value


def check_episode_seeds(seed: int, episodes: int) -> None:
    """ToolError unless the episode seeds ``seed + i`` lie from 0 to MAX_SEED (past it they
    would wrap round to negative seeds)."""
    if not 0 <= seed <= MAX_SEED - episodes + 1:
        raise ToolError(f"--seed {seed} with --episodes {episodes:,}: episode i is seeded "
                        f"seed + i, each from 0 to {MAX_SEED}; pass a --seed from 0 to "
                        f"{MAX_SEED - episodes + 1}")


def add_policy_options(parser: Any) -> None:
    """The options of the tools that load policies: ``--checkpoint`` of a run folder, and the
    opt-ins ``--trust-pickle`` and ``--trust-code``."""
    parser.add_argument("--checkpoint", choices=(BEST_POLICY, LAST_POLICY),
                        help="which checkpoint of a run folder (default: best)")
    parser.add_argument("--trust-pickle", action="store_true",
                        help="also load policy pickles (.pkl), which run any code they hold; "
                             "without it only weights-only .pt + .json files are read")
    parser.add_argument("--trust-code", action="store_true",
                        help="import the network or env factory (pkg.module:Name) that a "
                             "checkpoint's .json names, which runs its code; without it such "
                             "a checkpoint is refused")
