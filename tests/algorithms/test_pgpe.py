"""PGPE defaults and convergence (reference: EvoTorch 0.6.1 behaviour)."""

import pytest
import torch

from neurorun.algorithms.optimizers import ClipUp

from .conftest import evaluations_to_target, sphere


def test_defaults_follow_clipup_paper(build):
    algo = build("pgpe", center_learning_rate=0.15)
    assert algo.mirrored
    assert isinstance(algo.optimizer, ClipUp)
    assert algo.optimizer.max_speed == pytest.approx(0.3)
    assert algo.optimizer.momentum == pytest.approx(0.9)
    assert algo.ranking == "centered"


def test_stdev_max_change_defaults_to_twenty_percent(build):
    algo = build("pgpe", stdev_learning_rate=1e3)  # a huge step, bounded by the limiter
    algo.tell(sphere(algo.ask()))
    ratio = algo.stdev  # stdev_init was 1
    assert bool(torch.all((ratio >= 0.8 - 1e-6) & (ratio <= 1.2 + 1e-6)))
    assert bool(torch.any((ratio - 1).abs() > 0.19))


def test_stdev_min_and_max_bound_the_stdev(build):
    algo = build("pgpe", stdev_learning_rate=1e3, stdev_max_change=None, stdev_min=0.9,
                 stdev_max=1.05)
    for _ in range(3):
        algo.tell(sphere(algo.ask()))
        assert bool(torch.all((algo.stdev >= 0.9) & (algo.stdev <= 1.05)))


def _pgpe(build, **options):
    return build("pgpe", solution_length=10, popsize=20, stdev_learning_rate=0.1,
                 center_init=3.0, objective_sense="min", **options)


def test_adam_reaches_the_sphere_optimum(build):
    algo = _pgpe(build, center_learning_rate=0.1, optimizer="adam")
    assert evaluations_to_target(algo, sphere, max_generations=1_000) is not None


def test_plain_steps_with_raw_ranking_reach_the_sphere_optimum(build):
    algo = _pgpe(build, center_learning_rate=0.5, optimizer=None, ranking_method="raw")
    assert evaluations_to_target(algo, sphere, max_generations=1_000) is not None


def _final_error(build, max_speed):
    algo = _pgpe(build, center_learning_rate=max_speed / 2, optimizer_config={
        "max_speed": max_speed})
    errors = []
    for _ in range(400):
        algo.tell(sphere(algo.ask()))
        errors.append(float(sphere(algo.center)))
    return sum(errors[-50:]) / 50


def test_clipup_settles_in_a_ball_that_shrinks_with_max_speed(build):
    fast, slow = _final_error(build, 0.5), _final_error(build, 0.05)
    assert slow < fast / 10
