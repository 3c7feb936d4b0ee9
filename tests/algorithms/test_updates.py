"""Each algorithm's update against closed forms computed here with numpy from the samples and
their fitness (finite differences of the log-likelihood, the papers' formulas)."""

import numpy as np
import pytest
import torch

from neurorun.algorithms import make_algorithm

D, N = 4, 6
RNG = np.random.default_rng(0)
MU = RNG.normal(size=D)
SIGMA = RNG.uniform(0.5, 2.0, size=D)
FITNESS = torch.tensor(RNG.normal(size=N), dtype=torch.float64)


def _build(name, **options):
    settings = {"solution_length": D, "popsize": N, "center_init": MU.tolist(),
                "stdev_init": SIGMA.tolist(), "seed": 0, "dtype": torch.float64, **options}
    return make_algorithm(name, **settings)


def _centered_ranks(f):
    ranks = np.argsort(np.argsort(f, kind="stable"), kind="stable")
    return ranks / (len(f) - 1) - 0.5


def _log_likelihood(x, mu, sigma, weights):
    """sum_i w_i log N(x_i; mu, diag(sigma^2))."""
    z = (x - mu) / sigma
    return float(weights @ (-0.5 * z**2 - np.log(sigma)).sum(axis=1))


def _finite_difference(fn, at, eps=1e-6):
    grad = np.zeros_like(at)
    for j in range(len(at)):
        step = np.zeros_like(at)
        step[j] = eps
        grad[j] = (fn(at + step) - fn(at - step)) / (2 * eps)
    return grad


def test_pgpe_follows_sigma_squared_times_the_likelihood_gradient():
    algo = _build("pgpe", center_learning_rate=0.3, stdev_learning_rate=0.2, optimizer=None,
                  stdev_max_change=None)
    x = algo.ask().numpy()
    np.testing.assert_allclose(x[0::2] + x[1::2], 2 * np.tile(MU, (N // 2, 1)))  # mirrored
    algo.tell(FITNESS)
    w = _centered_ranks(FITNESS.numpy())
    d_mu = _finite_difference(lambda m: _log_likelihood(x, m, SIGMA, w), MU)
    d_sigma = _finite_difference(lambda s: _log_likelihood(x, MU, s, w), SIGMA)
    np.testing.assert_allclose(algo.center, MU + 0.3 * SIGMA**2 * d_mu / N, rtol=1e-6)
    np.testing.assert_allclose(algo.stdev, SIGMA + 0.2 * SIGMA**2 * d_sigma / N, rtol=1e-6)


def test_snes_follows_the_natural_gradient():
    algo = _build("snes", center_learning_rate=0.5, stdev_learning_rate=0.1,
                  scale_learning_rate=False, ranking_method="centered")
    x = algo.ask().numpy()
    algo.tell(FITNESS)
    w = _centered_ranks(FITNESS.numpy())
    w = w / np.abs(w).sum()  # other rankings than nes are scaled to unit total weight
    d_mu = _finite_difference(lambda m: _log_likelihood(x, m, SIGMA, w), MU)
    d_log_sigma = _finite_difference(lambda ls: _log_likelihood(x, MU, np.exp(ls), w),
                                     np.log(SIGMA))
    np.testing.assert_allclose(algo.center, MU + 0.5 * SIGMA**2 * d_mu, rtol=1e-6)
    np.testing.assert_allclose(algo.stdev, SIGMA * np.exp(0.05 * d_log_sigma), rtol=1e-6)


def _expm_symmetric(matrix):
    values, vectors = np.linalg.eigh(matrix)
    return vectors @ np.diag(np.exp(values)) @ vectors.T


def test_xnes_update_in_local_coordinates():
    algo = _build("xnes", center_learning_rate=1.0, stdev_learning_rate=0.2,
                  scale_learning_rate=False, ranking_method="centered")
    a = np.diag(SIGMA)
    x = algo.ask().numpy()
    algo.tell(FITNESS)
    w = _centered_ranks(FITNESS.numpy())
    z = np.linalg.solve(a, (x - MU).T).T
    expected_m = sum(wi * (np.outer(zi, zi) - np.eye(D)) for wi, zi in zip(w, z, strict=True))
    np.testing.assert_allclose(algo.center, MU + a @ (w @ z), rtol=1e-9)
    np.testing.assert_allclose(algo.A, a @ _expm_symmetric(0.1 * expected_m), rtol=1e-7,
                               atol=1e-12)
    np.testing.assert_allclose(algo.A @ algo.A_inv, np.eye(D), atol=1e-9)


@pytest.mark.parametrize("name", ["pgpe", "snes", "xnes", "cem", "sep_cmaes", "cmaes"])
def test_samples_follow_the_distribution(name):
    options = {"center_learning_rate": 0.1, "stdev_learning_rate": 0.1} if name == "pgpe" else (
        {"parenthood_ratio": 0.5} if name == "cem" else {})
    algo = _build(name, popsize=20_000, **options)
    samples = algo.ask().numpy()
    np.testing.assert_allclose(samples.mean(axis=0), MU, atol=0.05)
    np.testing.assert_allclose(samples.std(axis=0), SIGMA, rtol=0.03)


def test_population_stats_by_hand():
    from neurorun.algorithms.fitness import population_stats

    fitness = torch.tensor([3.0, -1.0, 10.0, 4.0])
    assert population_stats(fitness, "max") == {"popsize": 4, "mean_eval": 4.0,
                                                "median_eval": 3.5, "pop_best_eval": 10.0}
    assert population_stats(fitness, "min")["pop_best_eval"] == -1.0
    assert population_stats(torch.tensor([2.0, 7.0, 5.0]), "max")["median_eval"] == 5.0
