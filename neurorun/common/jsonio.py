"""JSON as neurorun writes it (a policy's .json, metrics.jsonl, an exported file's metadata).
JSON has no NaN or infinity: a measurement that is one is written as null (missing); a setting
(the keys a caller names ``exact``) keeps it as ``Infinity``, ``-Infinity`` or ``NaN``, the
extension Python's ``json`` reads back, since null would change the setting."""

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


def dumps(value: Any, *, exact: tuple[str, ...] = (), **options: Any) -> str:
    """``json.dumps`` of ``value`` with its non-finite floats as null (``finite_or_null``),
    but those under a top-level key named in ``exact``."""
    if isinstance(value, Mapping):
        written = {key: item if key in exact else finite_or_null(item)
                   for key, item in value.items()}
    else:
        written = finite_or_null(value)
    return json.dumps(written, **options)
