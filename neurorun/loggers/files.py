"""metrics.csv and metrics.jsonl in the run folder: always written, appended on resume."""

from __future__ import annotations

import csv
import errno
import io
import os
import shlex
from collections.abc import Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any, BinaryIO

from neurorun.common import jsonio
from neurorun.loggers.base import Logger, LoggerContext
from neurorun.record.layout import CSV_NAME, JSONL_NAME


def _no_follow(path: str, flags: int) -> int:
    """open()'s opener that makes a missing file and never follows a symbolic link (it could
    lead out of the run folder: ELOOP instead)."""
    return os.open(path, flags | os.O_CREAT | os.O_NOFOLLOW, 0o666)


def _opened(path: Path, mode: str) -> BinaryIO:
    """``path`` opened in ``mode`` (made where it is missing; never through a link).

    Raises:
        ValueError: it cannot be written (one line naming it and the fix).
        OSError: another cause than permission (a symbolic link: ELOOP, which the run
            folder's guard refuses first; a full disk, said as such by the command).
    """
    try:
        return open(path, mode, opener=_no_follow)
    except OSError as error:
        if error.errno not in (errno.EACCES, errno.EPERM, errno.EROFS, errno.EISDIR):
            raise  # a link (the guard refuses it first), a full disk, no descriptors left
        raise ValueError(
            f"{path} cannot be written ({error.strerror or error}): a run appends a row to it "
            f"every generation. Fix: make it writable (chmod u+w {shlex.quote(str(path))}, or "
            "chattr -i where it is immutable), or copy the run folder (cp -r) and resume the "
            "copy") from None


class MetricsFiles(Logger):
    """One CSV row and one JSON line per generation, flushed as they are written.

    Args:
        run_dir: the run folder.
        offsets: byte sizes recorded with the checkpoint being resumed; both files are cut
            back to them first (rows written after that checkpoint are replaced by the
            resumed run's rows). None starts fresh files.
    """

    always_on = True  # a run's metrics are always on disk (resume, neurorun-plot, sweeps)

    def __init__(self, run_dir: str | Path, offsets: Mapping[str, int] | None = None):
        self.csv_path = Path(run_dir) / CSV_NAME
        self.jsonl_path = Path(run_dir) / JSONL_NAME
        self.csv_path.parent.mkdir(parents=True, exist_ok=True)
        self.columns: list[str] | None = None
        self.rows = 0  # data rows written, saved with the offsets
        paths = (self.csv_path, self.jsonl_path)
        sizes = [0, 0] if offsets is None else [int(offsets.get(p.name, 0)) for p in paths]
        rows = None if offsets is None else offsets.get("rows")
        if offsets is not None:
            for path, size in zip(paths, sizes, strict=True):
                self._check(path, size, None if rows is None else int(rows) + (
                    path == self.csv_path and int(rows) > 0))
        with ExitStack() as stack:  # both opened before either is cut: neither, if one fails
            files = [stack.enter_context(_opened(path, "r+b")) for path in paths]
            for file, size in zip(files, sizes, strict=True):
                file.truncate(size)  # never longer: the check above saw size bytes
        if offsets is not None:
            self.rows = int(rows or 0)
            self.columns = self._existing_columns()

    @classmethod
    def from_settings(cls, settings: None, context: LoggerContext) -> Logger:
        return cls(context.run_dir, context.offsets)

    @staticmethod
    def _check(path: Path, size: int, lines: int | None) -> None:
        """The file holds at least the ``size`` bytes the checkpoint saw, in ``lines`` lines."""
        actual = path.stat().st_size if path.is_file() else None
        if actual is None or actual < size:
            found = "is missing" if actual is None else f"has {actual} bytes"
            raise ValueError(
                f"resume: {path} {found}, but the checkpoint being resumed saw {size}: it was "
                "deleted or cut after the checkpoint. Fix: restore it from a copy, or start a "
                "new run (resume would lose these metrics)")
        if lines is not None:
            with open(path, "rb") as file:
                found_lines = file.read(size).count(b"\n")
            if found_lines != lines:
                raise ValueError(
                    f"resume: the first {size} bytes of {path} hold {found_lines} lines, but "
                    f"the checkpoint being resumed wrote {lines}: the file was changed. Fix: "
                    "restore it from a copy, or start a new run")

    def _existing_columns(self) -> list[str] | None:
        with open(self.csv_path, newline="") as file:
            header = next(csv.reader(file), None)
        return header or None

    def log(self, generation: int, status: Mapping[str, Any]) -> None:
        if self.columns is None:
            self.columns = list(status)
            self._append(self.csv_path, self._csv_line(self.columns))
        row = ["" if status.get(key) is None else status.get(key) for key in self.columns]
        self._append(self.csv_path, self._csv_line(row))
        line = jsonio.dumps(status)
        self._append(self.jsonl_path, line + "\n")
        self.rows += 1

    @staticmethod
    def _csv_line(values: list[Any]) -> str:
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="\n").writerow(values)
        return buffer.getvalue()

    @staticmethod
    def _append(path: Path, text: str) -> None:
        with _opened(path, "ab") as file:
            file.write(text.encode("utf-8"))
            file.flush()

    def sync(self) -> None:
        for path in (self.csv_path, self.jsonl_path):
            with open(path, "rb") as file:
                os.fsync(file.fileno())

    def offsets(self) -> dict[str, int]:
        """Sizes and row count for the resume state."""
        return {"rows": self.rows,
                **{path.name: os.path.getsize(path) for path in (self.csv_path, self.jsonl_path)}}
