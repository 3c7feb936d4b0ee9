"""Atomic file writes: to a temporary file in the same folder, flushed and fsync-ed, then
renamed over the old one, so a crash at any moment leaves the previous file whole; several
files can be written as one unit (all new, or all as before)."""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

Write = Callable[[Path], None]  # writes one file's content to the path it is given


class DiskFullError(OSError):
    """No space left where files are written as one unit (the previous files stay)."""


def is_disk_full(error: BaseException) -> bool:
    """An OSError saying no space (or quota) is left."""
    return isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT)


def _disk_full(folder: Path, error: BaseException) -> bool:
    """Whether ``error`` came from a full disk: ENOSPC, or a library's own error (torch's
    zip writer reports "unexpected pos") while the folder's file system has no space left."""
    if is_disk_full(error):
        return True
    try:
        return shutil.disk_usage(folder).free < 1 << 20
    except OSError:
        return False


def atomic_write_all(files: Sequence[tuple[str | Path, Write]]) -> None:
    """Write several files as one unit: each ``write(temporary_path)`` first (fsynced, in the
    target's folder), then every rename, so either all files are new or all are as before
    (renames need no space: a full disk stops the unit before any file changes).

    Raises:
        DiskFullError: no space left (one line naming the folder).
    """
    written: list[tuple[Path, Path]] = []
    try:
        for path, write in files:
            path = Path(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp",
                                            dir=path.parent)
            os.close(handle)
            written.append((Path(name), path))
            write(Path(name))
            with open(name, "rb+") as file:
                os.fsync(file.fileno())
            os.chmod(name, 0o666 & ~_umask())  # mkstemp creates 0600; use the usual mode
    except BaseException as error:
        for temporary, _ in written:
            temporary.unlink(missing_ok=True)
        folder = written[-1][1].parent if written else Path(".")
        if isinstance(error, Exception) and _disk_full(folder, error):
            raise DiskFullError(errno.ENOSPC, "No space left on device: none of the files was "
                                "written, the previous ones are intact", str(folder)) from error
        raise
    try:
        for temporary, path in written:
            os.replace(temporary, path)
    finally:  # a failed rename (a crash is worse: the next start cleans up) leaves no temporary
        for temporary, _ in written:
            temporary.unlink(missing_ok=True)
    for folder in {path.parent for _, path in written}:
        _fsync_directory(folder)


def atomic_write(path: str | Path, write: Write) -> None:
    """Write one file atomically (see atomic_write_all): a failure leaves any previous
    `path` untouched."""
    atomic_write_all([(path, write)])


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _fsync_directory(folder: Path) -> None:
    """Make the rename itself durable (a no-op where directories cannot be opened)."""
    try:
        handle = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)


def torch_file(obj: Any) -> Write:
    return lambda temporary: torch.save(obj, temporary)


def text_file(text: str) -> Write:
    return lambda temporary: temporary.write_text(text, encoding="utf-8")


def atomic_write_text(text: str, path: str | Path) -> None:
    atomic_write(path, text_file(text))
