"""Each ranking against hand-computed weights."""

import math

import numpy as np
import pytest
import torch

from neurorun.algorithms.ranking import RANKINGS, rank

FITNESS = [3.0, 1.0, 2.0, 5.0]  # ranks, worst = 0: 2, 0, 1, 3


def _shaped(method):
    return rank(torch.tensor(FITNESS, dtype=torch.float64), method).numpy()


def test_centered():
    np.testing.assert_allclose(_shaped("centered"), [1 / 6, -0.5, -1 / 6, 0.5])


def test_linear():
    np.testing.assert_allclose(_shaped("linear"), [2 / 3, 0.0, 1 / 3, 1.0])


def test_nes():
    # n = 4: utility of the k-th best is max(0, ln 3 - ln k): ln 3, ln 1.5, 0, 0
    total = math.log(3) + math.log(1.5)
    expected = [math.log(1.5) / total - 0.25, -0.25, -0.25, math.log(3) / total - 0.25]
    np.testing.assert_allclose(_shaped("nes"), expected)


def test_normalized():
    stdev = math.sqrt((0.25**2 + 1.75**2 + 0.75**2 + 2.25**2) / 3)  # unbiased, mean 2.75
    expected = [0.25 / stdev, -1.75 / stdev, -0.75 / stdev, 2.25 / stdev]
    np.testing.assert_allclose(_shaped("normalized"), expected)


def test_raw_and_none_keep_fitness():
    np.testing.assert_allclose(_shaped("raw"), FITNESS)
    np.testing.assert_allclose(_shaped(None), FITNESS)


@pytest.mark.parametrize("method", sorted(RANKINGS))
def test_ranking_is_monotone_in_fitness(method):
    fitness = torch.randn(50, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    shaped = rank(fitness, method)
    order = torch.argsort(fitness)
    assert bool(torch.all(shaped[order].diff() >= 0))


def test_unknown_ranking_names_the_choices():
    with pytest.raises(ValueError, match=r"ranking_method='top'.*centered.*Fix"):
        rank(torch.ones(3), "top")
