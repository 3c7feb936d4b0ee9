"""The console streams of a command."""

from __future__ import annotations

import contextlib
import sys


def replace_unencodable() -> None:
    """Let stdout write '?' for a character its encoding lacks (PYTHONIOENCODING=ascii, a C
    locale): a run folder's path or a table's ± ended the command in a UnicodeEncodeError.
    stderr replaces such characters already (Python's default there)."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        with contextlib.suppress(ValueError, OSError):
            reconfigure(errors="replace")
