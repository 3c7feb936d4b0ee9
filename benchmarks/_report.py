"""What every benchmark JSON starts with (date, machine, versions), and writing it."""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any


def write_report(path: Path, **fields: Any) -> dict[str, Any]:
    """Writes ``fields`` after the date, machine and versions to ``path``; returns it all."""
    import torch

    report = {"date": dt.datetime.now().isoformat(timespec="seconds"),
              "machine": platform.platform(), "cpus": os.cpu_count(),
              "python": sys.version.split()[0], "torch": torch.__version__, **fields}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")
    return report
