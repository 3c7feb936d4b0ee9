"""CEM: the cross-entropy method for continuous search (Rubinstein 1999; Duan et al. 2016).

Each generation the distribution moves to the mean and (unbiased) stdev of the best
`parenthood_ratio` share of the population. Its stdev tends to collapse before the optimum;
`stdev_min` keeps it searching.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from neurorun.algorithms.distributions import weighted_moments
from neurorun.algorithms.gaussian import GaussianSearchAlgorithm
from neurorun.algorithms.options import SearchOptions, StdevLimits, group


@dataclass(frozen=True)
class CEMOptions(SearchOptions):
    parenthood_ratio: float | None = None  # share of the population that become parents
    limits: StdevLimits = group(StdevLimits)


class CEM(GaussianSearchAlgorithm):
    name = "cem"
    Options = CEMOptions

    def __init__(self, solution_length: int, **kwargs):
        super().__init__(solution_length, **kwargs)
        ratio = self.options.parenthood_ratio
        if ratio is None or not 0 < float(ratio) < 1:
            raise ValueError(
                f"parenthood_ratio={ratio!r}; expected a number in (0, 1), the share of the "
                "population kept as parents. Fix: e.g. parenthood_ratio=0.1."
            )
        if math.floor(self.popsize * float(ratio)) < 2:
            raise ValueError(
                f"parenthood_ratio={ratio!r} with popsize={self.popsize} selects fewer than 2 "
                "parents; expected at least 2 (their stdev is the new stdev). Fix: raise popsize "
                "or parenthood_ratio."
            )

    def _learning_rates(self) -> tuple[float, float]:
        return 1.0, 1.0  # the update jumps straight to the parents' statistics

    def _gradients(self, samples: torch.Tensor, fitness: torch.Tensor) -> dict[str, torch.Tensor]:
        n = len(fitness)
        num_parents = max(2, math.floor(n * float(self.options.parenthood_ratio)))
        weights = torch.zeros_like(fitness)
        weights[torch.topk(fitness, num_parents).indices] = 1.0 / num_parents
        mu = self.distribution.mu
        shift, second = weighted_moments(weights, samples, mu)  # parents' mean - mu, E(x-mu)^2
        unbiased = num_parents / (num_parents - 1)
        variance = (second - shift.square()).clamp(min=0) * unbiased
        return {"mu": shift, "sigma": variance.sqrt() - self.distribution.sigma}
