"""CEM: elite statistics and the stdev_min remedy for premature convergence."""

import numpy as np
import pytest
import torch

from neurorun.algorithms import CEM

from .conftest import sphere


def test_update_moves_to_the_parents_mean_and_stdev(build):
    algo = build("cem", popsize=10, parenthood_ratio=0.3, dtype=torch.float64)
    samples = algo.ask()
    fitness = -sphere(samples)
    algo.tell(fitness)
    parents = samples[torch.argsort(fitness, descending=True)[:3]].numpy()
    np.testing.assert_allclose(algo.center, parents.mean(axis=0), rtol=1e-10)
    np.testing.assert_allclose(algo.stdev, parents.std(axis=0, ddof=1), rtol=1e-8)


def _cem_error(build, **options):
    algo = build("cem", solution_length=10, popsize=20, parenthood_ratio=0.1, center_init=3.0,
                 objective_sense="min", seed=1, **options)
    errors = []
    for _ in range(300):
        algo.tell(sphere(algo.ask()))
        errors.append(float(sphere(algo.center)))
    return errors


def test_stdev_min_keeps_cem_improving(build):
    stalled = _cem_error(build)
    assert stalled[-1] == stalled[150] and stalled[-1] > 1.0  # the stdev collapsed
    improving = _cem_error(build, stdev_min=0.05)
    assert improving[-1] < improving[50] and improving[-1] < stalled[-1] / 100


@pytest.mark.parametrize(("limits", "said"), [
    ({"stdev_min": 0.5, "stdev_max": 0.1}, r"stdev_min=0.5 exceeds stdev_max=0.1"),
    ({"stdev_max": float("nan")}, r"stdev_max=nan; expected a finite number > 0"),
    ({"stdev_min": [0.1, 0.1, 0.1, 0.1, -1.0]}, r"stdev_min=\[0.1, .*finite number > 0"),
    ({"stdev_max_change": 2.0}, r"stdev_max_change=2.0; expected values in \(0, 1\)"),
])
def test_cem_refuses_stdev_limits_no_search_keeps(build, limits, said):
    """CEM has stdev limits but no step options: its limits are checked all the same."""
    with pytest.raises(ValueError, match=said):
        build("cem", popsize=20, parenthood_ratio=0.5, **limits)
    with pytest.raises(ValueError, match=said):  # the config's check, before any D
        CEM.checked_options(20, {"parenthood_ratio": 0.5, "stdev_init": 1.0, **limits})
