"""Search gradients of each distribution against closed forms and finite differences."""

import numpy as np
import pytest
import torch

import neurorun.algorithms.distributions as distributions
from neurorun.algorithms.distributions import (
    ExpGaussian,
    ExpSeparableGaussian,
    SeparableGaussian,
    SymmetricSeparableGaussian,
    weighted_moments,
)

D, N = 4, 6
RNG = np.random.default_rng(0)
MU = RNG.normal(size=D)
SIGMA = RNG.uniform(0.5, 2.0, size=D)
X = MU + SIGMA * RNG.normal(size=(N, D))
W = RNG.normal(size=N)
W0 = W - W.mean()  # centered weights: no baseline is subtracted for them


def _t(a):
    return torch.tensor(a, dtype=torch.float64)


def _log_likelihood(mu, sigma, weights=W0):
    """sum_i w_i log N(x_i; mu, diag(sigma^2)), in numpy."""
    z = (X - mu) / sigma
    return float(weights @ (-0.5 * z**2 - np.log(sigma)).sum(axis=1))


def _finite_difference(fn, at, eps=1e-6):
    grad = np.zeros_like(at)
    for j in range(len(at)):
        step = np.zeros_like(at)
        step[j] = eps
        grad[j] = (fn(at + step) - fn(at - step)) / (2 * eps)
    return grad


def test_separable_gradients_are_sigma_squared_times_likelihood_gradient():
    grads = SeparableGaussian(_t(MU), _t(SIGMA)).compute_gradients(_t(X), _t(W0), "centered")
    d_mu = _finite_difference(lambda m: _log_likelihood(m, SIGMA), MU)
    d_sigma = _finite_difference(lambda s: _log_likelihood(MU, s), SIGMA)
    np.testing.assert_allclose(grads["mu"], SIGMA**2 * d_mu / N, rtol=1e-6)
    np.testing.assert_allclose(grads["sigma"], SIGMA**2 * d_sigma / N, rtol=1e-6)


def test_separable_subtracts_a_baseline_for_uncentered_rankings():
    grads = SeparableGaussian(_t(MU), _t(SIGMA)).compute_gradients(_t(X), _t(W), "raw")
    np.testing.assert_allclose(grads["mu"], W0 @ (X - MU) / N, rtol=1e-10)


def test_symmetric_gradients_match_the_pairwise_formula():
    dist = SymmetricSeparableGaussian(_t(MU), _t(SIGMA))
    samples = dist.sample(N, torch.Generator().manual_seed(3)).numpy()
    np.testing.assert_allclose(samples[0::2] + samples[1::2], 2 * np.tile(MU, (N // 2, 1)))
    grads = dist.compute_gradients(_t(samples), _t(W0), "centered")
    noise, plus, minus = samples[0::2] - MU, W0[0::2], W0[1::2]
    expected_mu = ((plus - minus) / 2) @ noise / (N // 2)
    expected_sigma = ((plus + minus) / 2) @ ((noise**2 - SIGMA**2) / SIGMA) / (N // 2)
    np.testing.assert_allclose(grads["mu"], expected_mu, rtol=1e-9)
    np.testing.assert_allclose(grads["sigma"], expected_sigma, rtol=1e-9)


def test_symmetric_sampling_refuses_odd_counts():
    dist = SymmetricSeparableGaussian(_t(MU), _t(SIGMA))
    with pytest.raises(ValueError, match=r"popsize=5.*even.*Fix"):
        dist.sample(5, torch.Generator())


def test_snes_gradients_are_natural_gradients():
    weights = W0 / np.abs(W0).sum()  # non-nes rankings are scaled to unit total weight
    dist = ExpSeparableGaussian(_t(MU), _t(SIGMA))
    grads = dist.compute_gradients(_t(X), _t(W0), "centered")
    d_mu = _finite_difference(lambda m: _log_likelihood(m, SIGMA, weights), MU)
    d_log_sigma = _finite_difference(lambda ls: _log_likelihood(MU, np.exp(ls), weights),
                                     np.log(SIGMA))
    np.testing.assert_allclose(grads["mu"], SIGMA**2 * d_mu, rtol=1e-6)
    np.testing.assert_allclose(grads["sigma"], d_log_sigma, rtol=1e-6)
    dist.update(grads, lambda g: 0.5 * g, stdev_lr=0.1)
    np.testing.assert_allclose(dist.mu, MU + 0.5 * SIGMA**2 * d_mu, rtol=1e-6)
    np.testing.assert_allclose(dist.sigma, SIGMA * np.exp(0.05 * d_log_sigma), rtol=1e-6)


def _expm_symmetric(matrix):
    values, vectors = np.linalg.eigh(matrix)
    return vectors @ np.diag(np.exp(values)) @ vectors.T


def test_xnes_gradients_and_update_in_local_coordinates():
    a = np.eye(D) + 0.3 * RNG.normal(size=(D, D))
    dist = ExpGaussian(_t(MU), _t(SIGMA))
    dist.A, dist.A_inv = _t(a), _t(np.linalg.inv(a))
    grads = dist.compute_gradients(_t(X), _t(W0), "centered")
    z = np.linalg.solve(a, (X - MU).T).T
    expected_m = sum(w * (np.outer(zi, zi) - np.eye(D)) for w, zi in zip(W0, z, strict=True))
    np.testing.assert_allclose(grads["d"], W0 @ z, rtol=1e-9)
    np.testing.assert_allclose(grads["M"], expected_m, rtol=1e-9, atol=1e-12)
    dist.update(grads, lambda g: g, stdev_lr=0.2)
    np.testing.assert_allclose(dist.mu, MU + a @ (W0 @ z), rtol=1e-9)
    np.testing.assert_allclose(dist.A, a @ _expm_symmetric(0.1 * expected_m), rtol=1e-7)
    np.testing.assert_allclose(dist.A @ dist.A_inv, np.eye(D), atol=1e-9)


@pytest.mark.parametrize("kind", [SeparableGaussian, ExpSeparableGaussian, ExpGaussian])
def test_samples_follow_the_distribution(kind):
    dist = kind(_t(MU), _t(SIGMA))
    samples = dist.sample(20_000, torch.Generator().manual_seed(0)).numpy()
    np.testing.assert_allclose(samples.mean(axis=0), MU, atol=0.05)
    np.testing.assert_allclose(samples.std(axis=0), SIGMA, rtol=0.03)


def test_weighted_moments_across_blocks(monkeypatch):
    monkeypatch.setattr(distributions, "_BLOCK_ELEMENTS", 2 * D)  # 2 rows per block
    first, second = weighted_moments(_t(W), _t(X), _t(MU))
    np.testing.assert_allclose(first, W @ (X - MU), rtol=1e-10)
    np.testing.assert_allclose(second, W @ (X - MU) ** 2, rtol=1e-10)
