"""What a plain value is, the one way every part asks it: YAML and JSON read `true` as a bool,
and Python's bool is an int, so a count of `true` would pass as 1 unless asked this way. A
value read back from a file a run wrote is asked for exactly Python's own types."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def is_int(value: Any) -> bool:
    """An int that is not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """An int or a float that is not a bool (finite or not: callers that need finite say so)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_exact_int(value: Any) -> bool:
    """Python's own int: no bool, no other int subclass (an IntEnum). For a value read back from
    a file a run wrote (state.pt, a policy's .json), where a run writes only Python's own ints:
    another type says the file was not written by a run."""
    return type(value) is int


def is_exact_number(value: Any) -> bool:
    """Python's own int or float, as :func:`is_exact_int`: numpy's float64, a float subclass,
    is refused too."""
    return type(value) in (int, float)


def shown(value: Any) -> str:
    """A config value as an override writes it: null, true and false, a mapping as
    ``{key:value, ...}`` and a list as ``[...]`` with their items written the same way, else
    ``str`` (sync, 0.5, CartPole-v1)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{key}:{shown(item)}" for key, item in value.items()) + "}"
    if isinstance(value, Sequence) and not isinstance(value, str):
        return "[" + ", ".join(shown(item) for item in value) + "]"
    return str(value)
