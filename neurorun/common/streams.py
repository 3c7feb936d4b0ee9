"""The console streams of a command."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator


def replace_unencodable() -> None:
    """Let stdout write '?' for a character its encoding lacks (PYTHONIOENCODING=ascii, a C
    locale): a run folder's path or a table's ± ended the command in a UnicodeEncodeError.
    stderr replaces such characters already (Python's default there)."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        with contextlib.suppress(ValueError, OSError):
            reconfigure(errors="replace")


@contextlib.contextmanager
def native_output(descriptor: int) -> Iterator[list[str]]:
    """What native code (C++ beneath Python) writes to ``descriptor`` (1 or 2) meanwhile,
    caught: the list yielded holds its non-blank lines once the block ends. A file holds them,
    not a pipe: a pipe that nobody reads meanwhile would stop the writer once full."""
    python_stream = sys.stdout if descriptor == 1 else sys.stderr
    python_stream.flush()
    console = os.dup(descriptor)
    lines: list[str] = []
    with tempfile.TemporaryFile() as caught:
        os.dup2(caught.fileno(), descriptor)
        try:
            yield lines
        finally:
            python_stream.flush()
            os.dup2(console, descriptor)
            os.close(console)
            caught.seek(0)
            lines.extend(line for line in caught.read().decode(errors="replace").splitlines()
                         if line.strip())
