"""OpenAI-ES: the evolution strategy of Salimans, Ho, Chen, Sidor & Sutskever 2017
(arXiv:1703.03864).

A generation: mirrored samples ``mu +/- sigma * eps_k``; weights ``w`` the centered ranks of the
whole generation; then, over the n samples,

    g  = sum_i w_i eps_i / (n * sigma) - l2coeff * mu
    mu <- mu + Adam(g)

sigma stays fixed (``stdev_init``, or ``radius_init`` / sqrt(D)).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from neurorun.algorithms.base import Sums, Weights
from neurorun.algorithms.gaussian import SeparableSearch
from neurorun.algorithms.options import SearchOptions, group, require_positive


@dataclass(frozen=True)
class FixedStdevStepOptions:
    """How the center moves; there is no stdev step."""

    center_learning_rate: float | None = None
    optimizer: str | None = "adam"
    optimizer_config: Mapping[str, Any] | None = None
    ranking_method: str | None = "centered"


@dataclass(frozen=True)
class OpenAIESOptions(SearchOptions):
    step: FixedStdevStepOptions = group(FixedStdevStepOptions)
    l2coeff: float = 0.005  # L2 weight decay (the paper's): the gradient loses l2coeff x center
    symmetric: bool = True  # mirrored pairs; popsize must then be even


class OpenAIES(SeparableSearch):
    name = "openai_es"
    title = "OpenAI-ES"  # as README names it
    Options = OpenAIESOptions
    SUMS = {"w": ("eps",)}

    @classmethod
    def check(cls, options: OpenAIESOptions, popsize: int | None) -> None:
        super().check(options, popsize)
        if not 0 <= float(options.l2coeff) < float("inf"):
            raise ValueError(f"l2coeff={options.l2coeff!r}; expected a finite number >= 0. "
                             "Fix: e.g. l2coeff=0.005, or 0 for no weight decay.")

    @classmethod
    def check_learning_rates(cls, step: FixedStdevStepOptions) -> None:
        require_positive("center_learning_rate", step.center_learning_rate)

    def _learning_rates(self) -> tuple[float, float]:
        return self.options.step.center_learning_rate, 0.0

    def weights(self, fitness: torch.Tensor, norms: torch.Tensor | None) -> Weights:
        return {"w": self.ranked(fitness, baseline=False)}

    def update(self, sums: Sums, weights: Weights, fitness: torch.Tensor) -> None:
        gradient = sums["w.eps"] / (len(fitness) * self.sigma)
        self.step_center(gradient - float(self.options.l2coeff) * self.mu)
