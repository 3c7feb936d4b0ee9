"""metrics.csv and metrics.jsonl in the run folder: always written, appended on resume."""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from neurorun.loggers.base import Logger

CSV_NAME = "metrics.csv"
JSONL_NAME = "metrics.jsonl"


def _plain(value: Any) -> Any:
    """JSON has no NaN or infinity: write them as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class MetricsFiles(Logger):
    """One CSV row and one JSON line per generation, flushed as they are written.

    Args:
        run_dir: the run folder.
        offsets: byte sizes recorded with the checkpoint being resumed; both files are cut
            back to them first (rows written after that checkpoint are replaced by the
            resumed run's rows). None starts fresh files.
    """

    def __init__(self, run_dir: str | Path, offsets: Mapping[str, int] | None = None):
        self.csv_path = Path(run_dir) / CSV_NAME
        self.jsonl_path = Path(run_dir) / JSONL_NAME
        self.csv_path.parent.mkdir(parents=True, exist_ok=True)
        self.columns: list[str] | None = None
        if offsets is None:
            self.csv_path.write_text("")
            self.jsonl_path.write_text("")
        else:
            for path in (self.csv_path, self.jsonl_path):
                with open(path, "a+b") as file:
                    file.truncate(int(offsets.get(path.name, 0)))
            self.columns = self._existing_columns()

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
        line = json.dumps({key: _plain(value) for key, value in status.items()})
        self._append(self.jsonl_path, line + "\n")

    @staticmethod
    def _csv_line(values: list[Any]) -> str:
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="\n").writerow(values)
        return buffer.getvalue()

    @staticmethod
    def _append(path: Path, text: str) -> None:
        with open(path, "a", encoding="utf-8") as file:
            file.write(text)
            file.flush()

    def offsets(self) -> dict[str, int]:
        return {path.name: os.path.getsize(path) for path in (self.csv_path, self.jsonl_path)}
