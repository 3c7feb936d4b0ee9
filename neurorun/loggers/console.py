"""The console: a rich live view (progress bar with ETA, one table row per generation, the
config tree at start), a plain one-line-per-generation mode for logs, and a quiet mode."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import site
import sys
import sysconfig
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TextIO

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.tree import Tree

from neurorun.loggers.base import Limits, Logger, LoggerContext

LIBRARY_LOGGER = "neurorun"  # what neurorun's modules report through (logging.getLogger(__name__))


def show_library_messages(*, quiet: bool) -> Callable[[], None]:
    """Print neurorun's log records (backend chosen, compiles, actor placement) to stderr as
    `neurorun: <message>` while a run lives: INFO and up, or warnings only when `quiet`; and
    route Python warnings (`route_warning`). Returns the function that undoes both. Under
    Hydra the records also reach the run's neurorun.log (config.yaml's hydra.job_logging
    routes them there, and other libraries' records only there)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("neurorun: %(message)s"))
    handler.setLevel(logging.WARNING if quiet else logging.INFO)
    library = logging.getLogger(LIBRARY_LOGGER)
    library.addHandler(handler)
    level = library.level
    if level == logging.NOTSET or level > logging.INFO:
        library.setLevel(logging.INFO)
    shown_before, warnings.showwarning = warnings.showwarning, route_warning

    def hide() -> None:
        library.removeHandler(handler)
        library.setLevel(level)  # a user's own level comes back
        warnings.showwarning = shown_before

    return hide


def warn_now(log: logging.Logger, message: str, *args: Any) -> None:
    """A warning of ``log`` (under neurorun's logger) on the console at once, before the run's
    own console shows messages (its config and set-up checks), and in its log."""
    hide = show_library_messages(quiet=True)
    try:
        log.warning(message, *args)
    finally:
        hide()


_OWN_CODE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "")
_INSTALLED = tuple({os.path.join(path, "") for path in (
    *(sysconfig.get_path(name) for name in ("stdlib", "platstdlib", "purelib", "platlib")),
    site.getusersitepackages()) if path})


def route_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    """`warnings.showwarning` while a run lives: a warning of an installed package or of
    Python (brax's "not actively being maintained") is a `py.warnings` record, which Hydra's
    logging sends to neurorun.log only; neurorun's own and the user's code's warnings print as
    one `neurorun: ` line (and reach the log too)."""
    where = os.path.abspath(filename)
    if not where.startswith(_OWN_CODE) and where.startswith(_INSTALLED):
        logging.getLogger("py.warnings").warning("%s:%d: %s: %s", filename, lineno,
                                                 category.__name__, message)
    elif where.startswith(_OWN_CODE):
        logging.getLogger(f"{LIBRARY_LOGGER}.warnings").warning("%s: %s", category.__name__,
                                                                message)
    else:  # the user's code: where it warned
        logging.getLogger(f"{LIBRARY_LOGGER}.warnings").warning(
            "%s: %s (%s:%d)", category.__name__, message, filename, lineno)


# (status key, header, width, format)
COLUMNS = (
    ("generation", "gen", 5, "{:d}"),
    ("mean_eval", "mean", 10, "{:.2f}"),
    ("median_eval", "median", 10, "{:.2f}"),
    ("pop_best_eval", "pop best", 10, "{:.2f}"),
    ("center_eval", "center", 10, "{:.2f}"),
    ("best_sample_eval", "best sample", 12, "{:.2f}"),
    ("popsize", "pop", 6, "{:d}"),
    ("stdev_mean", "stdev", 8, "{:.4f}"),
    ("total_interaction_count", "steps", 12, "{:,d}"),
    ("steps_per_s", "steps/s", 9, "{:,.0f}"),
    ("elapsed_s", "time", 8, "{:.1f}"),
)


def _cell(status: Mapping[str, Any], key: str, width: int, fmt: str) -> str:
    value = status.get(key)
    if value is None:
        return "-".rjust(width)
    try:
        return fmt.format(value).rjust(width)
    except (ValueError, TypeError):
        return str(value).rjust(width)


def format_row(status: Mapping[str, Any]) -> str:
    return " ".join(_cell(status, key, width, fmt) for key, _, width, fmt in COLUMNS)


def format_header() -> str:
    return " ".join(header.rjust(width) for _, header, width, _ in COLUMNS)


def _leaf(value: Any) -> str:
    """YAML-like: null, true, 0.1, [1, 2], text unquoted."""
    return value if isinstance(value, str) else json.dumps(value, default=str)


def config_tree(config: Mapping[str, Any], label: str = "config") -> Tree:
    """A rich Tree of a nested config dict, one branch per group."""
    tree = Tree(f"[bold]{label}[/bold]")
    _grow(tree, config)
    return tree


def _grow(tree: Tree, config: Mapping[str, Any]) -> None:
    for key, value in config.items():
        if isinstance(value, Mapping) and value:
            _grow(tree.add(f"[bold]{key}[/bold]"), value)
        else:
            tree.add(f"{key}: [cyan]{escape(_leaf(value))}[/cyan]")


class _Activity(logging.Handler):
    """Passes the ``activity`` of neurorun's records (a program being compiled: its text;
    done: None) to ``show``."""

    def __init__(self, show: Callable[[str | None], None]):
        super().__init__()
        self.show = show

    def emit(self, record: logging.LogRecord) -> None:
        if hasattr(record, "activity"):
            self.show(record.activity)


@dataclass(frozen=True)
class ConsoleSettings:
    """``logger.console.*``."""

    plain: bool | None = None  # None: plain where stdout is not a terminal
    quiet: bool = False
    show_config: bool = True


class ConsoleLogger(Logger):
    """Progress on the terminal.

    Args:
        limits: the stop conditions, for the progress bar and its ETA.
        plain: one plain line per generation (None: when `stream` is not a terminal).
        quiet: print no config, header or generation rows: warnings and the end (why the run
            stopped, and the summary) only.
        show_config: print the config tree (or YAML in plain mode) at the start.
        stream: where to write (stdout by default).
    """

    Settings = ConsoleSettings

    always_on = True  # quiet mode still prints why the run stopped

    def __init__(self, limits: Limits, *, plain: bool | None = None, quiet: bool = False,
                 show_config: bool = True, stream: TextIO | None = None):
        self.limits = limits
        self.console = Console(file=stream or sys.stdout, highlight=False)
        self.plain = (not self.console.is_terminal) if plain is None else bool(plain)
        self.quiet = quiet
        self.show_config = show_config
        self.progress: Progress | None = None
        self.task: Any = None
        self.config: Mapping[str, Any] = {}
        self.description = "starting"  # the progress bar's, between activities
        self.activity = _Activity(self._show_activity)

    @classmethod
    def from_settings(cls, settings: ConsoleSettings, context: LoggerContext) -> Logger:
        return cls(context.limits, plain=settings.plain, quiet=settings.quiet,
                   show_config=settings.show_config)

    def start(self, config: Mapping[str, Any]) -> None:
        self.config = config  # shown by begin(): a config error may still come before it

    def begin(self) -> None:
        if self.quiet:
            return
        if self.show_config:
            self.console.print(config_tree(self.config), soft_wrap=True)
        self.console.print(format_header(), style="bold", soft_wrap=True, markup=False)
        if self.plain:
            return
        self.progress = Progress(
            TextColumn("{task.description}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), console=self.console,
        )
        self.task = self.progress.add_task(self.description, total=1.0)
        self.progress.start()
        logging.getLogger(LIBRARY_LOGGER).addHandler(self.activity)

    def _show_activity(self, activity: str | None) -> None:
        """What runs now (a compile) in place of the bar's description, until it is done."""
        if self.progress is not None:
            self.progress.update(self.task, description=activity or self.description)

    def log(self, generation: int, status: Mapping[str, Any]) -> None:
        if self.quiet:
            return
        if self.progress is None:
            self.console.print(format_row(status), soft_wrap=True, markup=False)
            return
        self.progress.console.print(format_row(status), soft_wrap=True, markup=False)
        name, fraction = self.limits.progress(status)
        description = f"{name}"
        if self.limits.target_score is not None:
            center = status.get("center_eval")
            shown = "-" if center is None else f"{center:.1f}"
            description += f" | center {shown} / target {self.limits.target_score:g}"
        self.description = description
        self.progress.update(self.task, completed=fraction, description=description)

    def close(self, summary: Mapping[str, Any]) -> None:
        progress, self.progress = self.progress, None
        logging.getLogger(LIBRARY_LOGGER).removeHandler(self.activity)
        # a terminal that hung up (SIGHUP) fails every write: the other loggers still close
        with contextlib.suppress(OSError):
            if progress is not None:
                progress.stop()
            reason = summary.get("stop_reason")
            if reason:
                self.console.print(f"stopped: {reason}", soft_wrap=True, markup=False)
