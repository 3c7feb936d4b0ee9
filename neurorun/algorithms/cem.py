"""CEM: the cross-entropy method for continuous search (Rubinstein 1999; Duan et al. 2016).

Each generation the distribution moves to the mean and (unbiased) stdev of the best
`parenthood_ratio` share of the population. Its stdev tends to collapse before the optimum;
`stdev_min` keeps it searching.

A generation: samples ``mu + sigma * eps_i``; weights ``1/m`` on the m best samples of the
whole generation, 0 elsewhere; then

    shift  = sigma * sum_i w_i eps_i              (the parents' mean - mu)
    second = sigma^2 * sum_i w_i eps_i^2          (their mean squared distance from mu)
    mu    <- mu + shift
    sigma <- sqrt((second - shift^2) * m / (m - 1))   (within the limits)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from neurorun.algorithms.base import Sums, Weights
from neurorun.algorithms.gaussian import SeparableSearch
from neurorun.algorithms.options import SearchOptions, StdevLimits, group


@dataclass(frozen=True)
class CEMOptions(SearchOptions):
    parenthood_ratio: float | None = None  # share of the population that become parents
    limits: StdevLimits = group(StdevLimits)


class CEM(SeparableSearch):
    name = "cem"
    title = "CEM"  # as README names it
    Options = CEMOptions
    SUMS = {"w": ("eps", "eps2")}

    @classmethod
    def check(cls, options: CEMOptions, popsize: int | None) -> None:
        super().check(options, popsize)
        ratio = options.parenthood_ratio
        if ratio is None or not 0 < float(ratio) < 1:
            raise ValueError(
                f"parenthood_ratio={ratio!r}; expected a number in (0, 1), the share of the "
                "population kept as parents. Fix: e.g. parenthood_ratio=0.1."
            )
        if popsize is not None and math.floor(popsize * float(ratio)) < 2:
            raise ValueError(
                f"parenthood_ratio={ratio!r} with popsize={popsize} selects fewer than 2 "
                "parents; expected at least 2 (their stdev is the new stdev). Fix: raise popsize "
                "or parenthood_ratio."
            )

    def _learning_rates(self) -> tuple[float, float]:
        return 1.0, 1.0  # the update jumps straight to the parents' statistics

    def weights(self, fitness: torch.Tensor, norms: torch.Tensor | None) -> Weights:
        parents = max(2, math.floor(len(fitness) * float(self.options.parenthood_ratio)))
        weights = torch.zeros_like(fitness)
        weights[torch.topk(fitness, parents).indices] = 1.0 / parents
        return {"w": weights}

    def update(self, sums: Sums, weights: Weights, fitness: torch.Tensor) -> None:
        parents = int((weights["w"] > 0).sum())
        shift = self.sigma * sums["w.eps"]
        second = self.sigma.square() * sums["w.eps2"]
        variance = (second - shift.square()).clamp(min=0) * (parents / (parents - 1))
        self.mu = self.mu + shift
        self.set_stdev(variance.sqrt())
