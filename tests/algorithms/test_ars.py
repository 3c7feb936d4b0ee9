"""ARS (Mania et al. 2018): one update worked out by hand, convergence, and refused settings."""

import math

import pytest
import torch

from neurorun.algorithms import make_algorithm

from .conftest import evaluations_to_target, rosenbrock, sphere


def _ars(**options):
    settings = {"solution_length": 2, "num_directions": 3, "top_directions": 2, "step_size": 0.1,
                "noise": 0.5, "center_init": [1.0, 0.0], "seed": 0, "dtype": torch.float64}
    return make_algorithm("ars", **{**settings, **options})


def test_one_update_by_hand():
    algo = _ars()
    samples = algo.ask()
    center = torch.tensor([1.0, 0.0], dtype=torch.float64)
    assert samples.shape == (6, 2)
    assert torch.allclose(samples[1::2], 2 * center - samples[0::2])  # mirrored: c + nu d, c - nu d
    # Pairs (r+, r-): (3, 1), (0, 2), (5, 5). max(r+, r-) = 3, 2, 5: the top 2 are directions
    # 0 and 2. Kept returns 3, 1, 5, 5: mean 3.5, population variance (0.25 + 6.25 + 2.25 + 2.25)
    # / 4 = 2.75. Step = 0.1 / (2 sqrt(2.75)) * ((3 - 1) d_0 + (5 - 5) d_2) = 0.1 d_0 / sqrt(2.75).
    algo.tell(torch.tensor([3.0, 1.0, 0.0, 2.0, 5.0, 5.0]))
    d0 = (samples[0] - center) / 0.5
    assert torch.allclose(algo.center, center + 0.1 * d0 / math.sqrt(2.75))
    assert torch.equal(algo.stdev, torch.full((2,), 0.5, dtype=torch.float64))  # noise is fixed


def test_all_directions_when_top_directions_is_null():
    algo = _ars(top_directions=None)
    samples = algo.ask()
    center = torch.tensor([1.0, 0.0], dtype=torch.float64)
    # All 6 returns 3, 1, 0, 2, 5, 3: mean 14/6, population stdev sqrt(sum (r - mean)^2 / 6).
    returns = [3.0, 1.0, 0.0, 2.0, 5.0, 3.0]
    mean = sum(returns) / 6
    sigma_r = math.sqrt(sum((r - mean) ** 2 for r in returns) / 6)
    algo.tell(torch.tensor(returns))
    d = (samples[0::2] - center) / 0.5
    step = 0.1 / (3 * sigma_r) * (2 * d[0] - 2 * d[1] + 2 * d[2])
    assert torch.allclose(algo.center, center + step)


def test_equal_returns_leave_the_center_in_place():
    algo = _ars()
    algo.ask()
    algo.tell(torch.ones(6))
    assert torch.equal(algo.center, torch.tensor([1.0, 0.0], dtype=torch.float64))


def test_popsize_follows_num_directions_and_adaptive_popsize_adds_directions():
    algo = make_algorithm("ars", solution_length=4, num_directions=5, top_directions=2,
                          step_size=0.1, noise=0.1, num_interactions=10, popsize_max=20, seed=0)
    assert algo.popsize == 10
    fitness = sphere(torch.cat([algo.ask(), algo.ask()]))  # 10 directions; the top 2 are kept
    algo.tell(fitness)
    assert algo.status["popsize"] == 20


def test_converges_on_the_sphere():  # fixed steps: it settles where steps of ~alpha stop helping
    algo = make_algorithm("ars", solution_length=10, num_directions=10, top_directions=5,
                          step_size=0.01, noise=0.01, center_init=1.0, objective_sense="min",
                          seed=1)
    assert evaluations_to_target(algo, sphere, target=1e-3, max_generations=2_000) is not None


def test_converges_on_rosenbrock():
    algo = make_algorithm("ars", solution_length=2, num_directions=8, top_directions=4,
                          step_size=0.002, noise=0.02, objective_sense="min", seed=0,
                          dtype=torch.float64)
    assert evaluations_to_target(algo, rosenbrock, target=1e-3, max_generations=20_000) is not None


@pytest.mark.parametrize(("options", "message"), [
    ({"top_directions": 4}, r"top_directions=4 > num_directions=3.*Fix"),
    ({"noise": 0.0}, r"noise=0.0; expected a finite number > 0.*Fix"),
    ({"step_size": -0.1}, r"step_size=-0.1; expected a finite number > 0.*Fix"),
    ({"step_size": 0.0}, r"step_size=0.0; expected a finite number > 0.*Fix"),
    ({"popsize": 8}, r"popsize=8 with num_directions=3.*popsize is 6.*Fix"),
    ({"num_directions": None, "popsize": 7},
     r"popsize=7.*even.*Fix: popsize=8, or popsize=null with num_directions set"),
    ({"stdev_init": 0.1}, r"ARS explores with its fixed `noise`.*Fix"),
    # reported as popsize=-2, the popsize that follows it
    ({"num_directions": -1}, r"^num_directions=-1; expected an integer >= 1. Fix"),
    ({"num_directions": 0, "popsize": None}, r"^num_directions=0; expected an integer >= 1"),
])
def test_bad_settings_name_the_key_and_the_fix(options, message):
    with pytest.raises(ValueError, match=message):
        _ars(**options)
