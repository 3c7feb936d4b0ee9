"""`neurorun-plot`: learning curves of runs and sweeps.

    neurorun-plot runs/multirun/2026-11-22_10-00-00 --out curves.png --x interactions
    neurorun-plot runs/CartPole-v1/pgpe/<run> runs/CartPole-v1/snes/<run> --y best_sample_eval

Runs are grouped by the overrides that differ between them (seed left out); each group is
one line, the mean over its runs, with a band (±std or min–max) around it. Runs whose x
values differ (interactions, episodes, time) are interpolated onto the union of their x
values within the range every run of the group covers (a group whose runs share no such
range is drawn run by run, with a warning). `--band runs` draws every run as its
own line in its group's color instead: runs that stop at different points (e.g. at
target_score) keep their whole curve. matplotlib draws them: `pip install 'neurorun[plots]'`.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from neurorun.common.extras import require
from neurorun.tools.common import ToolError, check_out, out_format, run_tool, write_output
from neurorun.tools.runs import X_COLUMNS, Run, check_column, group_runs, load_runs

if TYPE_CHECKING:
    from matplotlib.figure import Figure

Y_COLUMNS = ("mean_eval", "best_sample_eval", "center_eval", "pop_best_eval", "median_eval")
BANDS = ("std", "minmax", "none", "runs")
LONG_LABEL = 40  # characters: a legend with a longer label goes below the axes
LEGEND_WIDTH = 100  # characters of a legend line below the axes (the figure's width, small)
X_LABELS = {"generation": "generation", "interactions": "environment steps",
            "episodes": "training episodes", "time": "wall time (s)"}


def new_figure(**options: Any) -> Figure:
    """A matplotlib Figure: matplotlib is the plots extra, imported on first use
    (MissingExtraError, one line, where it is not installed)."""
    require("plots", "plotting")
    from matplotlib.figure import Figure

    return Figure(**options)


def run_curve(run: Run, x_column: str, y_column: str) -> tuple[np.ndarray, np.ndarray]:
    """`(x, y)` of one run: finite points only, sorted by x."""
    x, y = run.column(x_column), run.column(y_column)
    keep = np.isfinite(x) & np.isfinite(y)
    order = np.argsort(x[keep], kind="stable")
    return x[keep][order], y[keep][order]


def common_grid(runs: list[Run], x_column: str, y_column: str) -> tuple[np.ndarray, np.ndarray]:
    """`(grid, values)`: the x grid shared by `runs` and each run's y on it, (runs, points).

    Runs with identical x use them as they are; otherwise y is linearly interpolated onto the
    sorted union of all x values inside the range that every run covers."""
    curves = [curve for curve in (run_curve(run, x_column, y_column) for run in runs)
              if curve[0].size]
    if not curves:
        return np.empty(0), np.empty((0, 0))
    if all(np.array_equal(x, curves[0][0]) for x, _ in curves):
        return curves[0][0], np.stack([y for _, y in curves])
    low = max(float(x[0]) for x, _ in curves)
    high = min(float(x[-1]) for x, _ in curves)
    grid = np.unique(np.concatenate([x for x, _ in curves]))
    grid = grid[(grid >= low) & (grid <= high)]
    return grid, np.stack([np.interp(grid, x, y) for x, y in curves])


def plot_runs(paths: list[str | Path], *, x: str = "generation", y: str = "mean_eval",
              band: str = "std") -> Figure:
    """A Figure with one line per group of the runs under `paths` (see draw_runs)."""
    return draw_runs(load_runs(paths), x=x, y=y, band=band)


def draw_runs(runs: list[Run], *, x: str = "generation", y: str = "mean_eval",
              band: str = "std") -> Figure:
    """A Figure with one line per group of runs: the mean of `y` over the group's runs."""
    if x not in X_COLUMNS or band not in BANDS:
        raise ToolError(f"--x {x!r} --band {band!r}; expected --x one of {', '.join(X_COLUMNS)} "
                        f"and --band one of {', '.join(BANDS)}")
    check_column(runs, y)
    check_column(runs, X_COLUMNS[x])
    figure = new_figure(figsize=(7, 4.5), layout="constrained")
    axes = figure.add_subplot()
    for label, members in group_runs(runs).items():
        if band == "runs":
            _plot_each_run(axes, label, members, X_COLUMNS[x], y)
            continue
        grid, values = common_grid(members, X_COLUMNS[x], y)
        if grid.size <= 1 and _drew_apart(axes, label, members, X_COLUMNS[x], y):
            continue
        mean = values.mean(axis=0)
        (line,) = axes.plot(grid, mean, label=f"{label} ({len(values)} runs)",
                            marker=_one_point(grid))
        if len(values) > 1 and band != "none":
            low, high = ((mean - values.std(axis=0), mean + values.std(axis=0)) if band == "std"
                         else (values.min(axis=0), values.max(axis=0)))
            axes.fill_between(grid, low, high, color=line.get_color(), alpha=0.2, linewidth=0)
    axes.set_xlabel(X_LABELS[x])
    axes.set_ylabel(y)
    axes.grid(alpha=0.3)
    handles, labels = axes.get_legend_handles_labels()
    if max(map(len, labels), default=0) > LONG_LABEL:  # below the axes, off the curves
        wrapped = [textwrap.fill(label, LEGEND_WIDTH, break_long_words=False)
                   for label in labels]  # a line wider than the figure would be cut
        figure.legend(handles, wrapped, loc="outside lower center", fontsize="small")
    else:
        axes.legend(fontsize="small")
    band_text = {"std": "mean ± std over runs", "minmax": "mean, min–max over runs",
                 "none": "mean over runs", "runs": "each run"}[band]
    axes.set_title(f"{y} ({band_text})", fontsize="medium")
    return figure


def _drew_apart(axes, label: str, members: list[Run], x_column: str, y_column: str) -> bool:
    """For a group whose runs share at most one x point: each run its own line with a warning
    saying why, or a warning alone where none has a finite value (True); False where no run
    has two points (a one-point mean is all there is)."""
    sizes = [run_curve(run, x_column, y_column)[0].size for run in members]
    if not any(sizes):
        warnings.warn(f"{label}: no finite {y_column} against {x_column}; left out of the plot",
                      stacklevel=3)
        return True
    if max(sizes) < 2:
        return False
    warnings.warn(f"{label}: its runs' {x_column} ranges do not overlap (or meet at one "
                  "point), so there is no mean to draw; each run is drawn as its own line (as "
                  "--band runs)", stacklevel=3)
    _plot_each_run(axes, label, members, x_column, y_column)
    return True


def _plot_each_run(axes, label: str, members: list[Run], x_column: str, y_column: str) -> None:
    """One thin line per run, all in one color, the group labelled once."""
    color = None
    for run in members:
        x, y = run_curve(run, x_column, y_column)
        if x.size:
            legend = f"{label} ({len(members)} runs)" if color is None else None
            (line,) = axes.plot(x, y, color=color, linewidth=1, alpha=0.8, label=legend,
                                marker=_one_point(x))
            color = line.get_color()


def _one_point(x: np.ndarray) -> str | None:
    """A marker for a line of one point (a one-generation run, a seed solved at once), which a
    line alone leaves invisible."""
    return "o" if x.size == 1 else None


MIN_DPI, MAX_DPI = 10, 1200  # 1200 dpi: 8400 x 5400 pixels, ~180 MB; far more may not fit


def dpi_int(text: str) -> int:
    """argparse type: a dpi from MIN_DPI to MAX_DPI."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not MIN_DPI <= value <= MAX_DPI:
        raise argparse.ArgumentTypeError(f"{value}: expected an integer from {MIN_DPI} to "
                                         f"{MAX_DPI}")
    return value


def parser() -> argparse.ArgumentParser:
    result = argparse.ArgumentParser(prog="neurorun-plot",
                                     description="Plot learning curves of runs and sweeps.")
    result.add_argument("paths", nargs="+", help="run folders and/or sweep folders")
    result.add_argument("--out", required=True, help="image file: .png, .pdf, .svg, ...")
    result.add_argument("--x", choices=tuple(X_COLUMNS), default="generation",
                        help="x axis (generation)")
    result.add_argument("--y", default="mean_eval",
                        help=f"metric column, e.g. {', '.join(Y_COLUMNS)} (mean_eval)")
    result.add_argument("--band", choices=BANDS, default="std",
                        help="band around the mean over seeds (std); runs: every run as its "
                        "own line")
    result.add_argument("--dpi", type=dpi_int, default=120,
                        help=f"resolution of raster images, {MIN_DPI} to {MAX_DPI} (120)")
    result.add_argument("--force", action="store_true", help="replace --out if it exists")
    return result


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def body() -> None:
        out = Path(args.out)
        image_format = out_format(out).lstrip(".")
        if image_format not in new_figure().canvas.get_supported_filetypes():
            raise ToolError(f"--out {args.out!r}: unknown image format {image_format!r}; use "
                            ".png, .pdf or .svg")
        check_out(out, "plot", args.force)
        figure = plot_runs(args.paths, x=args.x, y=args.y, band=args.band)
        write_output(out, lambda tmp: figure.savefig(tmp, format=image_format, dpi=args.dpi),
                     "plot")
        print(f"wrote {out}")

    return run_tool("neurorun-plot", body)


if __name__ == "__main__":
    sys.exit(main())
