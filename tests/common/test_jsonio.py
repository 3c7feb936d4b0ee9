"""JSON as neurorun writes it: non-finite floats as null, at any depth."""

import json
import math

import numpy as np
import pytest

from neurorun.common.jsonio import dumps, finite_or_null


def test_nonfinite_floats_become_null_at_any_depth():
    value = {"a": math.nan, "b": [1.5, math.inf, (-math.inf, 2)], "c": {"d": np.float64("nan")},
             "e": "nan", "f": 3}
    expected = {"a": None, "b": [1.5, None, [None, 2]], "c": {"d": None}, "e": "nan", "f": 3}
    assert finite_or_null(value) == expected
    assert json.loads(dumps(value)) == expected
    assert dumps(math.nan) == "null"


def test_what_json_cannot_hold_is_still_refused():
    with pytest.raises(TypeError):
        dumps({"a": object()})
    assert dumps({"a": object()}, default=lambda _: "x") == '{"a": "x"}'
