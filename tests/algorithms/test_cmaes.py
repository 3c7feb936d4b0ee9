"""CMA-ES and sep-CMA-ES: strategy constants, size refusal, convergence."""

import math
import statistics

import pytest

from neurorun.algorithms.cmaes import cma_constants

from .conftest import evaluations_to_target, rosenbrock, sphere


def test_constants_match_the_tutorial_for_d10():
    k = cma_constants(10, 10, False)
    raw = [math.log(5.5) - math.log(i) for i in range(1, 6)]
    assert k.weights == pytest.approx([w / sum(raw) for w in raw])
    mu_eff = sum(raw) ** 2 / sum(w * w for w in raw)
    assert k.mu_eff == pytest.approx(mu_eff)
    assert k.c_sigma == pytest.approx((mu_eff + 2) / (15 + mu_eff))
    assert k.c_1 == pytest.approx(2 / (11.3**2 + mu_eff))
    assert k.c_mu == pytest.approx(2 * (mu_eff - 2 + 1 / mu_eff) / (144 + mu_eff))
    sep = cma_constants(10, 10, True)
    assert sep.c_1 == pytest.approx(k.c_1 * 4)  # (D + 2) / 3


def test_full_cmaes_refuses_large_d_and_names_sep_cmaes(build):
    with pytest.raises(ValueError, match=r"cmaes with solution_length=20000.*'sep_cmaes'"):
        build("cmaes", solution_length=20_000)
    assert build("cmaes", solution_length=20_000, separable=True).separable
    assert build("sep_cmaes", solution_length=20_000).ask().shape == (33, 20_000)


def test_stdev_vector_init_shapes_the_covariance(build):
    algo = build("cmaes", solution_length=3, stdev_init=[1.0, 2.0, 4.0])
    assert algo.stdev.tolist() == pytest.approx([1.0, 2.0, 4.0])


@pytest.mark.parametrize(
    ("name", "fn", "reference"),
    [("cmaes", sphere, 1_200), ("sep_cmaes", sphere, 1_200), ("cmaes", rosenbrock, 5_600)],
)
def test_within_reference_evaluations(build, name, fn, reference):
    runs = [evaluations_to_target(build(name, solution_length=10, center_init=3.0, seed=seed,
                                        objective_sense="min"), fn) for seed in range(3)]
    assert None not in runs and statistics.mean(runs) <= 1.1 * reference
