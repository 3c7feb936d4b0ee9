"""PGPE: policy gradients with parameter-based exploration (Sehnke et al. 2010).

Defaults follow the ClipUp paper (Toklu et al. 2020): symmetric (mirrored) sampling, centered
ranking, ClipUp with max_speed = 2 x center_learning_rate, stdev_max_change = 0.2.

A generation: samples ``mu + sigma * eps_i`` (pairs ``+eps_k``, ``-eps_k``); weights ``w`` the
ranked fitness of the whole generation (without their mean, unless the ranking centers it);
then, over the n samples,

    grad_mu    = sigma * sum_i w_i eps_i / n
    grad_sigma = sigma * (sum_i w_i eps_i^2 - sum_i w_i) / n
    mu    <- mu + ClipUp(grad_mu)
    sigma <- sigma + stdev_learning_rate * grad_sigma   (within the stdev limits)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from neurorun.algorithms.base import Sums, Weights
from neurorun.algorithms.gaussian import SeparableSearch
from neurorun.algorithms.options import SearchOptions, StdevLimits, StepOptions, group


@dataclass(frozen=True)
class PGPEOptions(SearchOptions):
    step: StepOptions = group(StepOptions, optimizer="clipup", ranking_method="centered")
    limits: StdevLimits = group(StdevLimits, stdev_max_change=0.2)
    symmetric: bool = True  # mirrored pairs; popsize must then be even


class PGPE(SeparableSearch):
    name = "pgpe"
    title = "PGPE with ClipUp"  # as README names it
    Options = PGPEOptions
    SUMS = {"w": ("eps", "eps2")}

    def weights(self, fitness: torch.Tensor, norms: torch.Tensor | None) -> Weights:
        return {"w": self.ranked(fitness)}

    def update(self, sums: Sums, weights: Weights, fitness: torch.Tensor) -> None:
        n, total = len(fitness), float(weights["w"].sum())
        grad_mu = self.sigma * sums["w.eps"] / n
        grad_sigma = self.sigma * (sums["w.eps2"] - total) / n
        self.step_center(grad_mu)
        self.set_stdev(self.sigma + self.stdev_lr * grad_sigma)
