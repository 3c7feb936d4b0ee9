"""What the benchmarks share: timed rounds, the spread of a figure, and the result file.

These machines are noisy (other processes, turbo, caches), so a figure is measured over
rounds and reported as its median with the min-max spread; a ratio of two things is taken
per round, the two measured one right after the other, and its spread reported the same way.
Every result file starts with the date, the machine, the versions and the load average.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def seconds(function: Callable[[], Any]) -> tuple[float, Any]:
    """Wall seconds of one call, and what it returned."""
    started = time.perf_counter()
    value = function()
    return time.perf_counter() - started, value


def rate(step: Callable[[], float], min_seconds: float) -> float:
    """Units per wall second of ``step()`` (which returns the units it did) called again and
    again until ``min_seconds`` have passed (at least once)."""
    units, spent = 0.0, 0.0
    while spent < min_seconds or units == 0:
        took, done = seconds(step)
        units, spent = units + done, spent + took
    return units / spent


def spread(values: Sequence[float], digits: int = 3) -> dict[str, float]:
    """Median, min and max of per-round figures."""
    return {"median": round(statistics.median(values), digits),
            "min": round(min(values), digits), "max": round(max(values), digits)}


def spread_text(value: dict, digits: int = 2, thousands: bool = False) -> str:
    """A ``spread`` as a table shows it: "median (min–max)"."""
    form = "{:,.0f}" if thousands else f"{{:.{digits}f}}"
    return (f"{form.format(value['median'])} ({form.format(value['min'])}–"
            f"{form.format(value['max'])})")


def ratios(numerators: Sequence[float], denominators: Sequence[float],
           digits: int = 3) -> dict[str, float]:
    """The spread of per-round ratios (round i's numerator over round i's denominator)."""
    return spread([a / b for a, b in zip(numerators, denominators, strict=True)], digits)


def machine() -> dict[str, Any]:
    """Date, machine, versions and the load average (1, 5, 15 minutes) at this moment."""
    import torch

    return {"date": dt.datetime.now().isoformat(timespec="seconds"),
            "machine": platform.platform(), "cpus": os.cpu_count(),
            "load_average": [round(x, 2) for x in os.getloadavg()],
            "python": sys.version.split()[0], "torch": torch.__version__}


class CaseFailedError(RuntimeError):
    """A benchmark case whose run failed: its error goes in the table, not a figure."""


def run_cases(cases: Sequence[Any], measure: Callable[[Any], Any],
              write: Callable[[dict[str, Any]], None]) -> dict[Any, Any]:
    """``measure(case)`` for each case, ``write``-ing the results as they come; a case that
    fails keeps its error (``{"error": ...}``) in the results, the others still run, and the
    process then exits 1 naming the failed cases: a failed run is never a time."""
    results: dict[Any, Any] = {}
    for case in cases:
        try:
            results[case] = measure(case)
        except CaseFailedError as error:
            results[case] = {"error": str(error)[-2000:]}
            print(f"FAILED {case}: {error}", file=sys.stderr, flush=True)
        write(results)
    failed = [str(case) for case, result in results.items()
              if isinstance(result, dict) and "error" in result]
    if failed:
        sys.exit(f"{len(failed)} case(s) failed: {', '.join(failed)}")
    return results


def write_result(path: Path, **fields: Any) -> dict[str, Any]:
    """Writes ``fields`` after :func:`machine`'s header to ``path``; returns it all."""
    report = {**machine(), **fields}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")
    return report
