"""What a plain value is, the one way every part asks it: YAML and JSON read `true` as a bool,
and Python's bool is an int, so a count of `true` would pass as 1 unless asked this way."""

from __future__ import annotations

from typing import Any


def is_int(value: Any) -> bool:
    """An int that is not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """An int or a float that is not a bool (finite or not: callers that need finite say so)."""
    return isinstance(value, int | float) and not isinstance(value, bool)
