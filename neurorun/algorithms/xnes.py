"""XNES: exponential natural evolution strategies (Glasmachers et al. 2010).

Full covariance A A^T, so memory and time grow with D^2 (D^3 for the matrix exponential);
for policy-sized D use SNES or sep-CMA-ES. Defaults: popsize 4 + floor(3 ln D), nes ranking,
center lr 1, covariance lr 0.6 (3 + ln D) / (D sqrt D).

A generation: samples ``mu + A eps_i``; weights ``w`` the NES utilities of the whole generation
(another ranking: without its mean unless it centers); then

    d = sum_i w_i eps_i,   M = sum_i w_i eps_i eps_i^T - sum_i w_i I
    mu <- mu + A (center_lr d)
    A  <- A expm(stdev_lr / 2 M)          (and A^-1 <- expm(-stdev_lr / 2 M) A^-1)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from neurorun.algorithms.base import Sums, Weights
from neurorun.algorithms.covariance_memory import check_full_covariance
from neurorun.algorithms.gaussian import (
    NESStepOptions,
    SeparableSearch,
    nes_learning_rates,
    nes_popsize,
)
from neurorun.algorithms.options import SearchOptions, group
from neurorun.algorithms.ranking import rank


@dataclass(frozen=True)
class XNESOptions(SearchOptions):
    step: NESStepOptions = group(NESStepOptions)


class XNES(SeparableSearch):
    """SeparableSearch's setup (center, initial stdev, ranking, optimizer) with a full A."""

    name = "xnes"
    title = "XNES"  # as README names it
    Options = XNESOptions
    SUMS = {"w": ("eps", "outer")}

    def __init__(self, solution_length: int, **kwargs: Any):
        check_full_covariance("xnes", solution_length, kwargs.get("dtype"), alternative="snes")
        super().__init__(solution_length, **kwargs)
        self.A = torch.diag(self.sigma)  # (D, D), cov = A A^T
        self.A_inv = torch.diag(1.0 / self.sigma)  # kept alongside: no inverse per generation

    @classmethod
    def default_popsize(cls, options: Any, solution_length: int | None) -> int | None:
        return None if solution_length is None else nes_popsize(solution_length)

    def _learning_rates(self) -> tuple[float, float]:
        dim = self.solution_length
        return nes_learning_rates(self.options.step,
                                  0.6 * (3 + math.log(dim)) / (dim * math.sqrt(dim)))

    @property
    def stdev(self) -> torch.Tensor:
        """Marginal standard deviations, sqrt(diag(A A^T))."""
        return self.A.square().sum(dim=1).sqrt()

    def samples(self, noise: torch.Tensor) -> torch.Tensor:
        return torch.addmm(self.mu, noise, self.A.T)

    def sampling_state(self) -> dict[str, torch.Tensor]:
        return {"mu": self.mu, "A": self.A}

    def weights(self, fitness: torch.Tensor, norms: torch.Tensor | None) -> Weights:
        weights = rank(fitness, self.ranking)
        if self.ranking not in ("centered", "normalized", "nes"):
            weights = weights - weights.mean()
        return {"w": weights}

    def update(self, sums: Sums, weights: Weights, fitness: torch.Tensor) -> None:
        total = float(weights["w"].sum())
        eye = torch.eye(self.solution_length, device=self.device, dtype=self.dtype)
        step = self.center_lr * sums["w.eps"] if self.optimizer is None else \
            self.optimizer.step(sums["w.eps"])
        self.mu = self.mu + self.A @ step
        half_step = 0.5 * self.stdev_lr * (sums["w.outer"] - total * eye)
        self.A = self.A @ torch.linalg.matrix_exp(half_step)
        self.A_inv = torch.linalg.matrix_exp(-half_step) @ self.A_inv
        self.sigma = self.stdev

    def _state(self) -> dict[str, Any]:
        return {**super()._state(), "A": self.A, "A_inv": self.A_inv}

    def _load_state(self, state: Mapping[str, Any]) -> None:
        super()._load_state(state)
        self.A = state["A"].to(self.device, self.dtype).clone()
        self.A_inv = state["A_inv"].to(self.device, self.dtype).clone()
