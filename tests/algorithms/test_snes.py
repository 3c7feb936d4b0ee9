"""SNES defaults and convergence against the EvoTorch 0.6.1 reference."""

import math
import statistics

import pytest

from .conftest import evaluations_to_target, sphere


def test_defaults(build):
    algo = build("snes", solution_length=100)
    assert algo.popsize == 4 + 13  # 4 + floor(3 ln 100)
    assert algo.center_lr == 1.0
    assert algo.stdev_lr == pytest.approx(0.2 * (3 + math.log(100)) / 10)
    assert algo.ranking == "nes"
    scaled = build("snes", solution_length=100, stdev_learning_rate=0.5)
    assert scaled.stdev_lr == pytest.approx(0.5 * algo.stdev_lr)
    unscaled = build("snes", solution_length=100, stdev_learning_rate=0.5,
                     scale_learning_rate=False)
    assert unscaled.stdev_lr == 0.5


def test_sphere_within_reference_evaluations(build):
    # EvoTorch 0.6.1 needs about 1,400 evaluations (10-D, center 3, stdev 1, to 1e-6).
    runs = [evaluations_to_target(build("snes", solution_length=10, center_init=3.0, seed=seed,
                                        objective_sense="min"), sphere) for seed in range(3)]
    assert None not in runs and statistics.mean(runs) <= 1.1 * 1_400
