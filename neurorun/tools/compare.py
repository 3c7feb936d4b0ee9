"""`neurorun-compare`: final and best scores of a sweep, one row per group of runs.

    neurorun-compare runs/multirun/2026-11-22_10-00-00
    neurorun-compare runs/multirun/2026-11-22_10-00-00 --csv results.csv   # or --csv alone

Per run: `final` is the metric's last value, `best` its highest, `steps` the final
total_interaction_count, `time` the final elapsed_s. Per group: mean ± std (population std,
ddof=0) of those over the group's runs (seeds) with a finite value; one such run has no
spread (std nan, its value shown alone).
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from neurorun.tools.common import (
    check_out,
    format_mean_std,
    is_stream,
    mean_std,
    run_tool,
    write_output,
)
from neurorun.tools.runs import Run, check_column, group_runs, load_runs

CSV_COLUMNS = ("group", "runs", "final_mean", "final_std", "best_mean", "best_std",
               "steps_mean", "steps_std", "time_s_mean", "time_s_std")


def _last(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)]
    return float(finite[-1]) if finite.size else float("nan")


def _best(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)]
    return float(finite.max()) if finite.size else float("nan")


def default_metric(runs: list[Run]) -> str:
    """center_eval when every run has it (the deployed policy's score), else mean_eval, with a
    warning naming the runs without it."""
    lacking = [run.path for run in runs if not np.isfinite(run.column("center_eval")).any()]
    if not lacking:
        return "center_eval"
    shown = ", ".join(map(str, lacking[:3])) + (f" and {len(lacking) - 3} more"
                                                if len(lacking) > 3 else "")
    warnings.warn(f"{len(lacking)} of {len(runs)} runs have no finite center_eval ({shown}; "
                  "eval_every=0, or every center evaluation failed): comparing mean_eval, the "
                  "population's training mean, instead; --metric center_eval compares the "
                  "runs that have it", stacklevel=2)
    return "mean_eval"


def compare(paths: list[str | Path], metric: str | None = None) -> tuple[str, list[dict]]:
    """`(metric, rows)`: one row per group with the CSV_COLUMNS keys."""
    runs = load_runs(paths)
    metric = default_metric(runs) if metric is None else metric
    check_column(runs, metric)
    rows = []
    for label, members in group_runs(runs).items():
        row: dict[str, Any] = {"group": label, "runs": len(members)}
        per_run = {
            "final": [_last(run.column(metric)) for run in members],
            "best": [_best(run.column(metric)) for run in members],
            "steps": [_last(run.column("total_interaction_count")) for run in members],
            "time_s": [_last(run.column("elapsed_s")) for run in members],
        }
        for name, values in per_run.items():
            row[f"{name}_mean"], spread = mean_std(values)
            # a spread over runs needs two of them with a value (nan: shown as the mean alone)
            row[f"{name}_std"] = spread if np.isfinite(values).sum() > 1 else float("nan")
        rows.append(row)
    return metric, rows


def to_csv(rows: list[dict]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def print_table(metric: str, rows: list[dict], console: Any = None) -> None:
    """Print the table on `console` (a rich Console; default: stdout)."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{metric}: final and best per run, mean ± std over runs")
    widest = max((len(row["group"]) for row in rows), default=5)
    table.add_column("group", min_width=min(widest, 40))
    for column in ("runs", "final", "best", "steps", "time (s)"):
        table.add_column(column, justify="right", no_wrap=True)
    for row in rows:
        cells = [format_mean_std(row[f"{name}_mean"], row[f"{name}_std"], digits)
                 for name, digits in (("final", 2), ("best", 2), ("steps", 0), ("time_s", 1))]
        table.add_row(row["group"], str(row["runs"]), *cells)
    # off a terminal (a pipe, a file) rich would cut the table at 80 columns: print it whole
    (console or Console(width=None if sys.stdout.isatty() else 400)).print(table)


def parser() -> argparse.ArgumentParser:
    result = argparse.ArgumentParser(prog="neurorun-compare",
                                     description="Compare the groups of runs of a sweep.")
    result.add_argument("paths", nargs="+", help="a sweep folder (or run folders)")
    result.add_argument("--metric", default=None,
                        help="metric column (default: center_eval if every run has it, "
                             "else mean_eval)")
    result.add_argument("--csv", nargs="?", const="-", default=None, metavar="FILE",
                        help="CSV instead of the table: to FILE, or to stdout without one")
    result.add_argument("--force", action="store_true", help="replace the --csv FILE if it exists")
    return result


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def body() -> None:
        if args.csv not in (None, "-"):
            check_out(args.csv, "CSV", args.force, "--csv")
        metric, rows = compare(args.paths, args.metric)
        if args.csv is None:
            print_table(metric, rows)
        elif args.csv == "-":
            sys.stdout.write(to_csv(rows))
        else:
            text = to_csv(rows)
            write_output(args.csv, lambda tmp: tmp.write_text(text, encoding="utf-8"), "CSV",
                         "--csv")
            if not is_stream(Path(args.csv)):  # /dev/stdout: the CSV is all it gets
                print(f"wrote {args.csv} ({metric})")

    return run_tool("neurorun-compare", body)


if __name__ == "__main__":
    sys.exit(main())
