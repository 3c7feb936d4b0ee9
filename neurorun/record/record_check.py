"""Reading a loaded record that can lie (state.pt): each getter refuses, in one line naming
the file, the key and what was expected, a value the runner never writes. Which keys a part's
record holds is the part's declaration (`RecordCheck.record`); :mod:`neurorun.record.state`
holds the rules of their values."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from itertools import islice
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import torch

from neurorun.common.errors import ConfigError, one_line
from neurorun.common.saved_values import SavedValueError
from neurorun.common.values import is_exact_int, is_exact_number

MISSING = object()  # shown as "missing"
INT64_MAX = 2**63 - 1  # counters end up in int64 tensors and numpy integers


class RecordCheck:
    """The checks of one state.pt's record; each refusal is a ConfigError (resuming again
    would fail the same way)."""

    def __init__(self, path: Path, read_with: Path | None = None):
        self.path = path
        self.read_with = read_with  # the config whose parts the record is compared with

    def refuse(self, key: str, value: Any, expected: str) -> NoReturn:
        changed = ("the file was changed" if self.read_with is None else
                   f"the file, or the config it is read with ({self.read_with}), was changed")
        raise ConfigError(
            f"resume: {self.path}: {key} is {described_value(value)}, expected {expected}; "
            f"{changed} or is not this run's. Fix: resume from an intact copy of the run, or "
            "start a new run.")

    def item(self, record: Mapping[str, Any], key: str, prefix: str = "") -> Any:
        if key not in record:
            self.refuse(key_name(prefix, key), MISSING, "a value (the runner always saves it)")
        return record[key]

    def record(self, value: Any, declared: type, key: str = "", *,
               exact: bool = False) -> Mapping[str, Any]:
        """``value`` as a record of ``declared`` (a part's declaration of what it saves: a
        TypedDict or a dataclass): a mapping that holds each key the declaration requires
        (``exact``: and no other, where the record is loaded as ``declared(**value)``)."""
        if not isinstance(value, Mapping):
            self.refuse(key, value, "a mapping")
        required = required_keys(declared)
        for name in required:
            self.item(value, name, key)
        if exact and len(value) != len(required):
            self.refuse(key, sorted(value), f"the keys {sorted(required)}")
        return value

    def mapping(self, record: Mapping[str, Any], key: str, prefix: str = "") -> Mapping:
        value = self.item(record, key, prefix)
        if not isinstance(value, Mapping):
            self.refuse(key_name(prefix, key), value, "a mapping")
        return value

    def count(self, value: Any, key: str, at_most: int = INT64_MAX, minimum: int = 0) -> int:
        if not is_exact_int(value) or not minimum <= value <= at_most:
            self.refuse(key, value, f"a whole number from {minimum} to {at_most}")
        return value

    def real(self, value: Any, key: str, low: float = -math.inf, high: float = math.inf,
             *, optional: bool = False) -> None:
        if value is None and optional:
            return
        if not is_exact_number(value) or not (math.isfinite(value) and low <= value <= high):
            bounds = "" if (low, high) == (-math.inf, math.inf) else f" from {low} to {high}"
            self.refuse(key, value, f"a finite number{bounds}" + (" or None" if optional else ""))

    def tensor(self, value: Any, key: str, *, positive: bool = False) -> None:
        """A floating tensor must be finite (the runner stops a search that is not)."""
        if not isinstance(value, torch.Tensor):
            self.refuse(key, value, "a tensor")
        if value.is_floating_point() and not bool(torch.isfinite(value).all()):
            self.refuse(key, value, "finite values (a diverged search is never saved)")
        if positive and not bool((value > 0).all()):
            self.refuse(key, value, "values > 0 (a standard deviation)")

    def follows(self, prefix: str, rule: Callable[..., None], *args: Any, **kwargs: Any) -> None:
        """``rule(*args, **kwargs)`` (one of :mod:`neurorun.common.saved_values`' rules, which name
        the keys below ``prefix``) refuses nothing."""
        try:
            rule(*args, **kwargs)
        except SavedValueError as error:
            self.refuse(key_name(prefix, error.key), error.value, error.expected)

    def generator(self, value: Any, key: str, kind: str, load: Callable[[Any], object]) -> None:
        """A random generator's state: ``load`` puts it into a throwaway generator of its kind,
        whose own check decides (a crafted state would otherwise fail the run mid-resume)."""
        try:
            load(value)
        except Exception as error:  # each library refuses in its own type
            self.refuse(key, value, f"{kind} ({one_line(error)})")

    def torch_generator(self, value: Any, key: str, device: torch.device | str = "cpu") -> None:
        self.generator(value, key, "a torch generator's state",
                       lambda state: torch.Generator(device=device).set_state(state))

    def bit_generator(self, value: Any, key: str, kind: str) -> None:
        """The state of one of numpy's bit generators, ``kind`` (e.g. PCG64)."""
        def load(state: Any) -> None:
            getattr(np.random, kind)().state = state

        self.generator(value, key, f"numpy's {kind} state", load)


def required_keys(declared: type) -> list[str]:
    """The keys a record of ``declared`` (a TypedDict or a dataclass) always holds, in the
    declaration's order."""
    if dataclasses.is_dataclass(declared):
        return [field.name for field in dataclasses.fields(declared)]
    return [key for key in declared.__annotations__ if key in declared.__required_keys__]


def key_name(prefix: str, key: Any) -> str:
    """``prefix.key`` as a refusal names it (``prefix['a.b']`` where the key has a dot)."""
    key = str(key)
    if "." in key:  # e.g. loggers['metrics.csv']
        return f"{prefix}[{key!r}]"
    return f"{prefix}.{key}" if prefix else key


def described_value(value: Any) -> str:
    """A value as a one-line refusal shows it: at most 60 characters."""
    if value is MISSING:
        return "missing"
    return one_line(_described(value), limit=60)


def _described(value: Any, depth: int = 0) -> str:
    """``repr(value)``, its tensors said in words (their values fill lines) and its containers
    cut short after a few items."""
    if isinstance(value, torch.Tensor):
        return f"a {value.dtype} tensor of shape {tuple(value.shape)}"
    if not isinstance(value, Mapping | list | tuple):
        return repr(value)
    if depth == 3 or not value:
        return "[...]" if value else repr(value)
    if isinstance(value, Mapping):
        items = [f"{key!r}: {_described(item, depth + 1)}"
                 for key, item in islice(value.items(), 4)]
    else:
        items = [_described(item, depth + 1) for item in value[:4]]
    ends = "{}" if isinstance(value, Mapping) else "[]"
    return ends[0] + ", ".join(items) + (", ..." if len(value) > 4 else "") + ends[1]
