"""Run folders on disk: finding them, reading their metrics, grouping a sweep's runs.

A run folder holds `metrics.csv` (or `metrics.jsonl`) and `.hydra/` (its saved config and
overrides); a sweep folder holds run folders below it. Runs are grouped by their saved
config, leaving out `seed`: the runs of one group are seeds of one setting.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue

from neurorun.common.errors import one_line
from neurorun.common.settings import accepts, wanted
from neurorun.config.saved_yaml import SavedFileError, read_config, read_yaml, without_env_reads
from neurorun.config.schema import declared
from neurorun.record.layout import METRIC_FILES, overrides_path, saved_config_path
from neurorun.record.record_check import described_value
from neurorun.tools.common import ToolError, is_input, open_input

X_COLUMNS = {"generation": "generation", "interactions": "total_interaction_count",
             "episodes": "total_episode_count", "time": "elapsed_s"}
# not settings of the run: its seed (a group's runs are seeds), a resume's folder and trust
IGNORED_OVERRIDES = ("seed", "resume", "trust_code")


@dataclass
class Run:
    path: Path
    metrics: dict[str, np.ndarray]  # column -> (rows,) float, nan where a row lacks it
    overrides: dict[str, str] = field(default_factory=dict)  # key -> value, in given order
    settings: dict[str, str] | None = None  # its saved config (read_settings; None: none saved)

    @property
    def env(self) -> str | None:
        """env.id of the run's saved config (None: unknown)."""
        env = (self.settings or {}).get("env.id")
        return None if env in (None, "???") else env

    def column(self, name: str) -> np.ndarray:
        return self.metrics.get(name, np.full(self.rows, np.nan))

    @property
    def rows(self) -> int:
        return len(next(iter(self.metrics.values()), ()))


def _natural_key(path: Path) -> list[object]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", str(path))]


def find_run_folders(path: str | Path) -> list[Path]:
    """Every folder at or below `path` that holds metrics (a run inside another run's folder
    too: taking a folder with metrics for a lone run hid the sweep below it); only the run
    of a metric file given by name."""
    path = Path(path)
    if not path.exists():
        raise ToolError(f"{str(path)!r} does not exist; expected a run folder or a sweep folder")
    if not path.is_dir():  # a metric file (a FIFO there is said as such where it is read)
        if path.name not in METRIC_FILES:
            raise ToolError(f"{str(path)!r} is a file, not a run's metrics.csv or metrics.jsonl; "
                            "expected a run folder or a sweep folder")
        return [path.parent]
    found = {hit.parent for name in METRIC_FILES for hit in path.rglob(name)}
    if not found:
        raise ToolError(f"{str(path)!r} has no metrics.csv or metrics.jsonl in it or below it; "
                        "expected a neurorun run folder or a multirun sweep folder")
    return sorted(found, key=_natural_key)


def read_metrics(folder: Path) -> dict[str, np.ndarray]:
    """Columns of `metrics.csv` (else `metrics.jsonl`) as float arrays; blanks become nan."""
    csv_path, jsonl_path = (folder / name for name in METRIC_FILES)
    try:
        if is_input(csv_path):
            with open_input(csv_path) as file:
                text = file.read().decode("utf-8")
            text = text[:text.rfind("\n") + 1]  # not a last row cut short by a run writing it
            rows = list(csv.DictReader(io.StringIO(text, newline="")))
        else:
            rows = _jsonl_rows(jsonl_path)
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise ToolError(f"cannot read the metrics of {str(folder)!r}: {error}") from error
    columns = list(dict.fromkeys(key for row in rows for key in row if key is not None))
    return {key: np.array([_number(row.get(key)) for row in rows]) for key in columns}


def _jsonl_rows(path: Path) -> list[dict]:
    """The rows of a metrics.jsonl; a warning counts the lines that are no JSON object (a run
    writes objects only), but for a last line cut short by a run still writing it."""
    with open_input(path) as file:
        text = file.read().decode("utf-8")
    lines = text.splitlines()
    rows, skipped = [], 0
    for index, line in enumerate(lines):
        try:
            row = json.loads(line)
        except (ValueError, RecursionError):  # RecursionError: nested past Python's stack
            row = None
        if isinstance(row, dict):
            rows.append(row)
        elif index < len(lines) - 1 or text.endswith("\n"):
            skipped += 1
    if skipped:
        warnings.warn(f"{path}: {skipped} of its {len(lines)} lines are no JSON object (a run "
                      "writes one per generation): left out", stacklevel=3)
    return rows


def _number(value: object) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return float("nan")


def read_overrides(folder: Path) -> dict[str, str]:
    """`key=value` lines of `.hydra/overrides.yaml`, then of each resume's (a later value of
    a key wins; prefixes +, ++, ~ dropped; Python's True/False as YAML's true/false, as a
    single run saves them)."""
    paths = [overrides_path(folder),
             *sorted(overrides_path(folder).parent.glob("resumed_*/overrides.yaml"))]
    result = {}
    for path in paths:
        for line in _override_lines(path):
            key, _, value = line.partition("=")
            result[key.lstrip("+~")] = {"True": "true", "False": "false"}.get(value, value)
    return result


def _override_lines(path: Path) -> list[str]:
    if not path.exists():  # a FIFO there is refused by read_yaml
        return []
    try:
        lines = OmegaConf.to_container(read_yaml(path) or OmegaConf.create([]))
    except Exception as error:  # SavedFileError names the file itself
        raise ToolError(str(error) if isinstance(error, SavedFileError) else
                        f"cannot read {str(path)!r}: {error}") from error
    return [str(line) for line in lines] if isinstance(lines, list) else []


def read_settings(folder: Path) -> dict[str, str] | None:
    """The run's saved `.hydra/config.yaml` as ``{dotted key: value}`` (values as written,
    interpolations and ``${oc.env:...}`` unread; a list or mapping as JSON), less
    ``IGNORED_OVERRIDES`` and ``hydra``; None where the run saved no config."""
    path = saved_config_path(folder)
    if not path.exists():  # a FIFO there is refused by read_yaml
        return None
    try:
        config = read_yaml(path)
    except Exception as error:  # SavedFileError names the file itself
        raise ToolError(str(error) if isinstance(error, SavedFileError) else
                        f"cannot read {str(path)!r}: {error}") from error
    if not isinstance(config, DictConfig):
        return None
    settings: dict[str, str] = {}

    def walk(value: Any, key: str) -> None:
        if isinstance(value, dict) and value and key.count(".") < 1:  # sections, then keys
            for name, item in value.items():
                walk(item, f"{key}.{name}" if key else str(name))
        elif key.partition(".")[0] not in (*IGNORED_OVERRIDES, "hydra"):
            settings[key] = value if isinstance(value, str) else json.dumps(value)

    walk(OmegaConf.to_container(without_env_reads(config), resolve=False), "")
    return settings


def run_config(folder: Path) -> DictConfig | None:
    """The saved config of the run `folder`, read with bounds and its `${oc.env:...}` left
    unread; None where `folder` has none (a checkpoint outside a run folder).

    Raises:
        ToolError: the run's config is there but refused (aliases, too deep or large, not a
            mapping...), as neurorun-compare refuses it: what it says would be left out.
    """
    path = saved_config_path(folder)
    if not os.path.lexists(path):
        return None
    try:
        return without_env_reads(read_config(path))
    except SavedFileError as error:  # it names the file
        raise ToolError(str(error)) from None
    except OSError as error:
        raise ToolError(f"cannot read {str(path)!r}: {error.strerror or error}") from None


# what the tools take from a run's saved config (each checked as the config declares it; None
# where the config has no such key)
RUN_SETTINGS = ("env.env_config", "problem.episode_length", "eval_episodes", "seed")


def run_settings(checkpoint: Path) -> dict[str, Any]:
    """The `RUN_SETTINGS` of the run a checkpoint file belongs to, by key ({} in no run).

    Raises:
        ToolError: the run's config is refused, or holds a value there that no run saves.
    """
    folder = checkpoint.parent.parent  # <run>/checkpoints/<file>
    config = run_config(folder)
    if config is None:
        return {}
    path = saved_config_path(folder)
    settings = {}
    for key in RUN_SETTINGS:
        try:  # a value of ??? is a ${oc.env:...} left unread (without_env_reads)
            value = OmegaConf.select(config, key, default=None, throw_on_missing=True)
            if OmegaConf.is_config(value):
                value = OmegaConf.to_container(value, resolve=True, throw_on_missing=True)
        except Exception as error:  # an unresolvable value, a ${oc.env:...} left unread
            unread = isinstance(error, MissingMandatoryValue)
            raise ToolError(f"{str(path)!r}: {key} cannot be read "
                            f"({one_line(error, first_line=True)}"
                            f"{'; the tools read no ${oc.env:...}' if unread else ''}). Fix: "
                            "restore the file from an intact copy of the run") from None
        hint, limits = declared(key)
        if value is not None and not accepts(value, hint, limits):
            raise ToolError(f"{str(path)!r}: {key}={described_value(value)}; expected "
                            f"{wanted(hint, limits)} or null, as a run saves it. Fix: restore "
                            "the file from an intact copy of the run")
        settings[key] = value
    return settings


def _distinct_runs(paths: list[str | Path]) -> list[Path]:
    """The run folders below `paths`, each once: one reached again by another path (a
    symbolic link, `..`, a sweep and one of its runs) is left out, with one warning."""
    first: dict[Path, Path] = {}
    again = []
    for folder in (f for path in paths for f in find_run_folders(path)):
        seen = first.setdefault(folder.resolve(), folder)
        if seen != folder:
            again.append(f"{folder} (= {seen})")
    if again:
        warnings.warn(f"{', '.join(dict.fromkeys(again))}: the same run given again; counted "
                      "once", stacklevel=3)
    return list(first.values())


def load_runs(paths: list[str | Path]) -> list[Run]:
    """Every run below `paths` that has at least one row of metrics, each once."""
    runs, empty = [], []
    for folder in _distinct_runs(paths):
        metrics = read_metrics(folder)
        if metrics:
            generations = metrics.get("generation", np.array([]))
            if np.any(np.diff(generations) <= 0):
                warnings.warn(f"{folder}: its metrics' generations do not increase (two runs "
                              "wrote into this folder?); its curve may be wrong", stacklevel=2)
            runs.append(Run(folder, metrics, read_overrides(folder), read_settings(folder)))
        else:
            empty.append(folder)
    if not runs:
        raise ToolError(f"no metrics rows in {', '.join(map(str, paths))}; let the runs write "
                        "at least one generation")
    for folder in empty:
        warnings.warn(f"{folder}: its metrics have no rows yet; left out", stacklevel=2)
    return runs


def group_runs(runs: list[Run]) -> dict[str, list[Run]]:
    """Runs grouped by their saved config (``read_settings``; a run without one by its
    overrides), in order: the runs of one group are seeds of one setting.

    A group's label is ``key=value, ...`` of the overrides its runs share where other groups'
    differ (the words of the commands); where those tell two groups apart from no other, the
    saved settings that differ. A single group is labelled by its runs' common overrides (or
    the folder name of a single run, else "all runs"). Runs of different envs never share a
    group, and a warning says so."""
    envs = list(dict.fromkeys(run.env for run in runs if run.env is not None))
    if len(envs) > 1:
        warnings.warn(f"these runs are of {len(envs)} envs ({', '.join(envs)}): their scores do "
                      "not compare across envs; each env's runs are grouped apart", stacklevel=2)
    grouped: dict[tuple, list[Run]] = {}
    for run in runs:
        identity = run.settings if run.settings is not None else {
            **_told(run.overrides), "": run.env}  # "": no saved config, grouped apart
        grouped.setdefault(tuple(sorted(identity.items())), []).append(run)
    groups = list(grouped.values())
    shared = [{key: value for key, value in _told(group[0].overrides).items()
               if all(run.overrides.get(key) == value for run in group)} for group in groups]
    if len(groups) == 1:
        label = _label(shared[0], list(shared[0])) or (
            groups[0][0].path.name if len(groups[0]) == 1 else "all runs")
        return {label: groups[0]}
    varying = _varying(shared)
    labels = [_label(words, varying or list(words)) for words in shared]
    if len(envs) > 1:  # never one label across envs
        labels = [label if re.search(r"\benv(\.id)?=", label) else
                  ", ".join(x for x in (f"env={group[0].env}", label) if x)
                  for label, group in zip(labels, groups, strict=True)]
    if "" in labels or len(set(labels)) < len(labels):  # the words tell them apart from none
        settings = [group[0].settings or {} for group in groups]
        labels = [_label(values, _varying(settings)) or group[0].path.name
                  for values, group in zip(settings, groups, strict=True)]
    if len(set(labels)) < len(labels):  # folders of one name in two sweeps
        labels = [f"{label} ({group[0].path})" for label, group in zip(labels, groups,
                                                                        strict=True)]
    return dict(zip(labels, groups, strict=True))


def _told(overrides: dict[str, str]) -> dict[str, str]:
    """The overrides that are settings (not ``IGNORED_OVERRIDES`` or ``hydra.*``), in order."""
    return {key: value for key, value in overrides.items()
            if key not in IGNORED_OVERRIDES and not key.startswith("hydra.")}


def _varying(values: list[dict[str, str]]) -> list[str]:
    """The keys whose value is not the same in every mapping of ``values``, in order."""
    keys = dict.fromkeys(key for mapping in values for key in mapping)
    return [key for key in keys if len({mapping.get(key) for mapping in values}) > 1]


def _label(values: dict[str, str], keys: list[str]) -> str:
    return ", ".join(f"{key}={values[key]}" for key in keys if key in values)


def check_column(runs: list[Run], name: str) -> None:
    """ToolError when no run has a finite value in column `name`."""
    if any(np.isfinite(run.column(name)).any() for run in runs):
        return
    known = sorted({key for run in runs for key in run.metrics})
    raise ToolError(f"no run has values in the column {name!r}; columns: {', '.join(known)}"
                    + ("; center_eval needs eval_every > 0" if name == "center_eval" else ""))
