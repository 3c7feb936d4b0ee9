"""The objective's sense: "max" (higher fitness is better, as for episode returns) or "min" (a
cost). Every rule that depends on it is here: which value is better, when a target is reached,
and the maximized form of a value that the search and the stall rule work with."""

from __future__ import annotations

import math
from typing import Any, TypeVar

SENSES = ("max", "min")
TARGET_SIGNS = {"max": ">=", "min": "<="}  # how a reached target is said, per sense

Value = TypeVar("Value")  # a float or a tensor of fitness values


def check_sense(sense: Any) -> str:
    """``sense`` if it is one of SENSES."""
    if sense not in SENSES:
        raise ValueError(f"objective_sense={sense!r}; expected 'max' or 'min'. "
                         "Fix: 'max' when higher fitness is better, 'min' for costs.")
    return sense


def maximized(sense: str, value: Value) -> Value:
    """``value`` as a maximized quantity (negated when minimizing): a float or a tensor."""
    return value if sense == "max" else -value


def improves(sense: str, value: float | None, incumbent: float | None) -> bool:
    """Whether ``value`` beats ``incumbent`` (None: nothing yet); a non-finite value never
    does (a NaN or infinite return is never best)."""
    if value is None or not math.isfinite(value):
        return False
    return incumbent is None or maximized(sense, value) > maximized(sense, incumbent)


def reached(sense: str, value: float | None, target: float | None) -> bool:
    """Whether ``value`` reaches ``target`` (None: no target; a missing or non-finite value
    never does)."""
    if target is None or value is None or not math.isfinite(value):
        return False
    return maximized(sense, value) >= maximized(sense, target)


def best(sense: str, values: list[float]) -> float:
    """The best of ``values`` (not empty)."""
    return max(values) if sense == "max" else min(values)
