"""The objective's sense: which value is better, when a target is reached, the best of several."""

import json
import math

import pytest
import torch

from neurorun.common.sense import best, check_sense, improves, maximized, reached


@pytest.mark.parametrize(("sense", "value", "incumbent", "expected"), [
    ("max", 2.0, 1.0, True), ("max", 1.0, 2.0, False), ("max", 1.0, None, True),
    ("min", 1.0, 2.0, True), ("min", 2.0, 1.0, False), ("min", 2.0, None, True),
    ("max", 1.0, 1.0, False), ("min", 1.0, 1.0, False),  # a tie keeps the earlier one
    ("max", math.nan, None, False), ("max", math.inf, 1.0, False), ("min", -math.inf, 1.0, False),
    ("max", None, 1.0, False),
])
def test_improves(sense, value, incumbent, expected):
    assert improves(sense, value, incumbent) is expected


@pytest.mark.parametrize(("sense", "value", "target", "expected"), [
    ("max", 10.0, 10.0, True), ("max", 9.99, 10.0, False), ("max", 11.0, 10.0, True),
    ("min", 10.0, 10.0, True), ("min", 9.0, 10.0, True), ("min", 10.01, 10.0, False),
    ("max", math.inf, 10.0, False), ("min", -math.inf, 10.0, False),
    ("max", math.nan, 10.0, False), ("max", None, 10.0, False), ("max", 1e9, None, False),
])
def test_reached(sense, value, target, expected):
    assert reached(sense, value, target) is expected


def test_best_and_maximized():
    assert best("max", [3.0, -1.0, 2.0]) == 3.0 and best("min", [3.0, -1.0, 2.0]) == -1.0
    assert maximized("max", 2.5) == 2.5 and maximized("min", 2.5) == -2.5
    fitness = torch.tensor([1.0, -2.0])
    assert maximized("max", fitness) is fitness  # not copied on the hot path
    assert maximized("min", fitness).tolist() == [-1.0, 2.0]


def test_check_sense_names_the_senses():
    assert check_sense("min") == "min"
    with pytest.raises(ValueError, match=r"objective_sense='mean'; expected 'max' or 'min'"):
        check_sense("mean")


def test_the_sweep_objective_follows_the_sense(tmp_path):
    from neurorun.loop.objective import objective_value
    rows = [{"center_eval": c, "total_interaction_count": 100 * (g + 1)}
            for g, c in enumerate([10.0, 30.0, 5.0])]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert objective_value("best_center_eval", tmp_path, None, "min") == 5.0
    assert objective_value("neg_interactions_to_target", tmp_path, 10.0, "min") == -100.0
    assert objective_value("neg_interactions_to_target", tmp_path, 20.0, "max") == -200.0
