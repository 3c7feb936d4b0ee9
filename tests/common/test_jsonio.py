"""JSON as neurorun writes it: non-finite measurements as null at any depth, settings exact."""

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


def test_a_setting_keeps_its_nonfinite_floats_where_a_measurement_gets_null():
    """An env keyword of infinity (Hopper's healthy_z_range) read back as null would change
    the env the policy is rebuilt with."""
    value = {"env_config": {"healthy_z_range": [0.8, math.inf], "g": -math.inf},
             "network_args": {"bound": math.nan}, "score": math.inf}
    read = json.loads(dumps(value, exact=("env_config", "network_args")))
    assert read["env_config"] == {"healthy_z_range": [0.8, math.inf], "g": -math.inf}
    assert math.isnan(read["network_args"]["bound"]) and read["score"] is None
