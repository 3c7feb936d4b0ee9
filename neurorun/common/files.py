"""Reading a file that anyone may have put there (a run folder's, a cache folder's): a regular
file only, opened without blocking (a FIFO would wait for a writer for good), at most so many
bytes (a link to ``/dev/zero`` or a huge file would fill the memory)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO


class NotRegularFileError(ValueError):
    """A file to read that is a FIFO, socket, device or folder (one line naming it)."""


class FileTooLargeError(ValueError):
    """A file to read that holds more bytes than its reader takes (one line naming it)."""


def entry_kind(mode: int) -> str:
    """What a folder entry of ``mode`` (``st_mode``) is, in words: "a FIFO", "a folder", ..."""
    for test, kind in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"),
                       (stat.S_ISDIR, "a folder"), (stat.S_ISREG, "a file")):
        if test(mode):
            return kind
    return "not a regular file"


def open_regular(path: str | Path) -> BinaryIO:
    """``path`` open for reading in binary, once the open file is known to be a regular one.

    Raises:
        NotRegularFileError: a FIFO, socket, device or folder.
        OSError: it cannot be opened (missing, no permission).
    """
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as error:
        if error.errno != errno.ENXIO:  # ENXIO: a socket, which open() cannot open
            raise
        descriptor = None
    mode = os.stat(path).st_mode if descriptor is None else os.fstat(descriptor).st_mode
    if not stat.S_ISREG(mode):
        if descriptor is not None:
            os.close(descriptor)
        raise NotRegularFileError(f"{str(path)!r} is {entry_kind(mode)}, not a regular file")
    return open(descriptor, "rb")


def read_bounded(path: str | Path, limit: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them.

    Raises:
        NotRegularFileError: a FIFO, socket, device or folder.
        FileTooLargeError: more than ``limit`` bytes.
        OSError: it cannot be opened or read.
    """
    with open_regular(path) as file:
        data = file.read(limit + 1)
    if len(data) > limit:
        raise FileTooLargeError(f"{str(path)!r} is larger than {limit} bytes")
    return data
