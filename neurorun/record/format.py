"""The version of a run's saved format (``checkpoints/state.pt`` and each policy's ``.json``),
and the one place that reads an older version: one function per step fills what files of that
version may lack, so the record, the runner and the parts read the current format only.

A file says its version in its ``format`` key; files saved before the version existed have
none and are format 1. A file of a later format than this neurorun's was written by a later
neurorun: it is refused, not guessed at.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from neurorun.common.errors import ConfigError
from neurorun.common.values import is_int

FORMAT = 4  # the format this neurorun writes
KEY = "format"  # where state.pt and each policy .json say theirs
UNVERSIONED = 1  # the files saved before the format had a version


class FormatError(ConfigError):
    """A file's format is not one this neurorun reads: the message names the file, its format,
    this neurorun's and the fix."""


def format_of(record: Mapping[str, Any], path: str | Path) -> int:
    """The format of ``record`` (a loaded state.pt or a policy's .json) read from ``path``.

    Raises:
        FormatError: a format newer than :data:`FORMAT`, or not a whole number >= 1 (one line).
    """
    version = record.get(KEY, UNVERSIONED)
    if not is_int(version) or version < 1:
        raise FormatError(
            f"{path}: format is {version!r}, expected a whole number from 1 to {FORMAT} (the "
            f"version of neurorun's file format; this neurorun's is {FORMAT}); the file was "
            "changed or is not neurorun's. Fix: use an intact copy of the file the run wrote.")
    if version > FORMAT:
        raise FormatError(
            f"{path} has format {version}, and this neurorun reads formats up to {FORMAT}: a "
            "later neurorun wrote it. Fix: upgrade neurorun (pip install -U neurorun), then "
            "read it again.")
    return version


def upgrade_state(state: dict[str, Any], path: str | Path) -> dict[str, Any]:
    """``state`` (a loaded state.pt, changed in place) in the current format: each step from
    its own format on fills what that format may lack. A value of the wrong type is left for
    the record's checks to refuse (record/state.py)."""
    for step in STATE_STEPS[format_of(state, path) - 1:]:
        step(state)
    state[KEY] = FORMAT
    return state


def stamped(record: Mapping[str, Any]) -> dict[str, Any]:
    """``record`` as a file of this neurorun's format holds it: its format first."""
    return {KEY: FORMAT, **record}


def _state_1_to_2(state: dict[str, Any]) -> None:
    """Format 1: the seed, the restart keys, the noise draw, ClipUp's step count and the best
    center's observation statistics were each added to state.pt after runs were saved
    without them."""
    for key, value in (("seed", None),  # not compared with the config's on resume
                       ("restarts", 0), ("restart", None),  # None: the schedule as built
                       ("restart_due", False), ("stall_history", [])):
        state.setdefault(key, value)
    status = state.get("status")
    if isinstance(status, dict) and status:  # {} before generation 1
        status.setdefault("restarts", 0)
    algorithm = _mapping(state, "algorithm")
    algorithm.setdefault("draw", 0)  # a saved run is between generations: any draw is redrawn
    optimizer = _mapping(_mapping(algorithm, "search"), "optimizer")
    if "max_speed" in optimizer:  # ClipUp, the one optimizer with a max_speed: no decay then
        optimizer.setdefault("steps", 0)
    _mapping(state, "best").setdefault("obs_stats", None)


def _state_2_to_3(state: dict[str, Any]) -> None:
    """Format 2: the last generation's status had no length of the center's test episodes."""
    status = state.get("status")
    if isinstance(status, dict) and status:
        status.setdefault("center_eval_length", None)


def _state_3_to_4(state: dict[str, Any]) -> None:
    """Format 3 differs in the policy files only: they held no ``obs_min_variance`` (the floor
    was always 0.01, which ``RunningNorm.from_export`` reads for a file without it); state.pt's
    observation statistics held their floor already."""
    del state  # nothing to fill


def _mapping(record: Any, key: str) -> dict[str, Any]:
    """``record[key]`` where both are dicts, else a throwaway dict (nothing to fill)."""
    value = record.get(key) if isinstance(record, dict) else None
    return value if isinstance(value, dict) else {}


# STATE_STEPS[n - 1] reads format n into format n + 1
STATE_STEPS: tuple[Callable[[dict[str, Any]], None], ...] = (_state_1_to_2, _state_2_to_3,
                                                            _state_3_to_4)
