"""SNES: separable natural evolution strategies (Schaul, Glasmachers & Schmidhuber 2011).

Defaults: popsize 4 + floor(3 ln D), nes ranking, center lr 1, stdev lr 0.2 (3 + ln D) / sqrt(D).

A generation: samples ``mu + sigma * eps_i``; weights ``w`` the NES utilities of the whole
generation (another ranking is scaled to unit total weight); then

    mu    <- mu + center_lr * sigma * sum_i w_i eps_i
    sigma <- sigma * exp(stdev_lr / 2 * (sum_i w_i eps_i^2 - sum_i w_i))   (within the limits)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from neurorun.algorithms.base import Sums, Weights
from neurorun.algorithms.gaussian import (
    NESStepOptions,
    SeparableSearch,
    nes_learning_rates,
    nes_popsize,
)
from neurorun.algorithms.options import SearchOptions, StdevLimits, group
from neurorun.algorithms.ranking import rank


@dataclass(frozen=True)
class SNESOptions(SearchOptions):
    step: NESStepOptions = group(NESStepOptions)
    limits: StdevLimits = group(StdevLimits)


class SNES(SeparableSearch):
    name = "snes"
    title = "SNES"  # as README names it
    Options = SNESOptions
    SUMS = {"w": ("eps", "eps2")}

    @classmethod
    def default_popsize(cls, options: SNESOptions, solution_length: int | None) -> int | None:
        return None if solution_length is None else nes_popsize(solution_length)

    def _learning_rates(self) -> tuple[float, float]:
        dim = self.solution_length
        return nes_learning_rates(self.options.step, 0.2 * (3 + math.log(dim)) / math.sqrt(dim))

    def weights(self, fitness: torch.Tensor, norms: torch.Tensor | None) -> Weights:
        weights = rank(fitness, self.ranking)
        if self.ranking != "nes":
            weights = weights / weights.abs().sum().clamp(min=torch.finfo(weights.dtype).tiny)
        return {"w": weights}

    def update(self, sums: Sums, weights: Weights, fitness: torch.Tensor) -> None:
        total = float(weights["w"].sum())
        self.step_center(self.sigma * sums["w.eps"])
        self.set_stdev(self.sigma * torch.exp(0.5 * self.stdev_lr * (sums["w.eps2"] - total)))
