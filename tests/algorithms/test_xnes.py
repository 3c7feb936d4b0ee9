"""XNES defaults, size refusal and convergence against the EvoTorch 0.6.1 reference."""

import math
import statistics

import pytest

from .conftest import evaluations_to_target, rosenbrock, sphere


def test_defaults(build):
    algo = build("xnes", solution_length=100)
    assert algo.popsize == 17
    assert algo.stdev_lr == pytest.approx(0.6 * (3 + math.log(100)) / (100 * 10))


def test_refuses_a_covariance_that_does_not_fit(build):
    with pytest.raises(ValueError, match=r"xnes with solution_length=20000.*GiB.*Fix: use 'snes'"):
        build("xnes", solution_length=20_000)


@pytest.mark.parametrize(("fn", "reference"), [(sphere, 4_300), (rosenbrock, 10_800)])
def test_within_reference_evaluations(build, fn, reference):
    runs = [evaluations_to_target(build("xnes", solution_length=10, center_init=3.0, seed=seed,
                                        objective_sense="min"), fn, max_generations=3_000)
            for seed in range(3)]
    assert None not in runs and statistics.mean(runs) <= 1.1 * reference
