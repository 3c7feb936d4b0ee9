"""JSON as neurorun writes it: JSON has no NaN or infinity, so they are written as null (a
policy's .json, metrics.jsonl, an exported file's metadata)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any


def finite_or_null(value: Any) -> Any:
    """``value`` with every non-finite float in it (in mappings, lists, tuples) as None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {key: finite_or_null(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [finite_or_null(item) for item in value]
    return value


def dumps(value: Any, **options: Any) -> str:
    """``json.dumps`` of ``value`` with its non-finite floats as null (``finite_or_null``)."""
    return json.dumps(finite_or_null(value), allow_nan=False, **options)
