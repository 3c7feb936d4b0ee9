"""OpenAI-ES: the evolution strategy of Salimans, Ho, Chen, Sidor & Sutskever 2017
(arXiv:1703.03864).

Mirrored samples x = center +/- sigma e, centered-rank fitness F, the search gradient
g = 1/(n sigma) sum_i F_i e_i minus the L2 decay `l2coeff` x center, followed with Adam;
sigma stays fixed (`stdev_init`, or `radius_init` / sqrt(D)).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from neurorun.algorithms.distributions import weighted_moments
from neurorun.algorithms.gaussian import GaussianSearchAlgorithm
from neurorun.algorithms.options import SearchOptions, group


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
    l2coeff: float = 0.0  # L2 weight decay: the gradient loses l2coeff x center
    symmetric: bool = True  # mirrored pairs; popsize must then be even


class OpenAIES(GaussianSearchAlgorithm):
    name = "openai_es"
    Options = OpenAIESOptions

    def __init__(self, solution_length: int, **kwargs: Any):
        super().__init__(solution_length, **kwargs)
        l2coeff = self.options.l2coeff
        if not 0 <= float(l2coeff) < float("inf"):
            raise ValueError(f"l2coeff={l2coeff!r}; expected a finite number >= 0. "
                             "Fix: e.g. l2coeff=0.005, or 0 for no weight decay.")

    def _learning_rates(self) -> tuple[float, float]:
        return self.options.step.center_learning_rate, 0.0

    def _gradients(self, samples: torch.Tensor, fitness: torch.Tensor) -> dict[str, torch.Tensor]:
        weights = self._weights(fitness)
        sigma = self.distribution.sigma
        first, _ = weighted_moments(weights, samples, self.center)  # sigma * sum_i F_i e_i
        gradient = first / (len(weights) * sigma.square())
        return {"mu": gradient - float(self.options.l2coeff) * self.center,
                "sigma": torch.zeros_like(sigma)}
