"""CMA-ES (Hansen & Ostermeier 2001; defaults of Hansen's 2016 tutorial) and sep-CMA-ES
(Ros & Hansen 2008), whose diagonal covariance makes it linear in D for policy-sized problems.

Full CMA-ES keeps D x D matrices and is refused where they would not fit (use `sep_cmaes`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import torch

from neurorun.algorithms.base import SearchAlgorithm
from neurorun.algorithms.distributions import weighted_moments
from neurorun.algorithms.gaussian import nes_popsize
from neurorun.algorithms.options import SearchOptions, as_vector, initial_stdev
from neurorun.algorithms.sizing import check_full_covariance


@dataclass(frozen=True)
class CMAESOptions(SearchOptions):
    separable: bool = False  # diagonal covariance (sep-CMA-ES)


@dataclass(frozen=True)
class CMAConstants:
    """Strategy parameters for dimension D and population size n."""

    weights: tuple[float, ...]  # recombination weights of the best mu, best first
    mu_eff: float
    c_sigma: float
    d_sigma: float
    c_c: float
    c_1: float
    c_mu: float
    chi_n: float  # E||N(0, I)||


@lru_cache(maxsize=64)
def cma_constants(dim: int, n: int, separable: bool) -> CMAConstants:
    mu = max(1, n // 2)
    raw = [math.log((n + 1) / 2) - math.log(i + 1) for i in range(mu)]
    weights = [w / sum(raw) for w in raw] if n > 1 else [1.0]
    mu_eff = 1.0 / sum(w * w for w in weights)
    c_sigma = (mu_eff + 2) / (dim + mu_eff + 5)
    d_sigma = 1 + 2 * max(0.0, math.sqrt((mu_eff - 1) / (dim + 1)) - 1) + c_sigma
    c_c = (4 + mu_eff / dim) / (dim + 4 + 2 * mu_eff / dim)
    c_1 = 2 / ((dim + 1.3) ** 2 + mu_eff)
    c_mu = min(1 - c_1, 2 * (mu_eff - 2 + 1 / mu_eff) / ((dim + 2) ** 2 + mu_eff))
    if separable:  # a diagonal has D, not D^2 / 2, entries to learn: learn faster
        c_1 *= (dim + 2) / 3
        c_mu = min(1 - c_1, c_mu * (dim + 2) / 3)
    chi_n = math.sqrt(dim) * (1 - 1 / (4 * dim) + 1 / (21 * dim * dim))
    return CMAConstants(tuple(weights), mu_eff, c_sigma, d_sigma, c_c, c_1, c_mu, chi_n)


class CMAES(SearchAlgorithm):
    name = "cmaes"
    Options = CMAESOptions

    def __init__(self, solution_length: int, **kwargs: Any):
        separable = kwargs.get("separable", self.DEFAULTS.get("separable", False))
        if not separable:
            check_full_covariance("cmaes", solution_length, kwargs.get("dtype"),
                                  alternative="sep_cmaes")
        super().__init__(solution_length, **kwargs)
        self.separable = bool(self.options.separable)
        kind = {"device": self.device, "dtype": self.dtype}
        start = self.options.start
        stdev = initial_stdev(start, solution_length, **kind)
        self.mean = (torch.zeros(solution_length, **kind) if start.center_init is None
                     else as_vector(start.center_init, "center_init", solution_length, **kind))
        self.sigma = stdev.max()  # scalar step size; per-coordinate shape goes into C
        scale = (stdev / self.sigma).square()
        self.p_sigma = torch.zeros(solution_length, **kind)
        self.p_c = torch.zeros(solution_length, **kind)
        # separable: cov is the diagonal (D,); full: cov (D, D) = B diag(d^2) B^T
        self.cov = scale if self.separable else torch.diag(scale)
        self.B = None if self.separable else torch.eye(solution_length, **kind)
        self.d = scale.sqrt()
        self.eigen_generation = 0

    def default_popsize(self, solution_length: int) -> int:
        return nes_popsize(solution_length)

    @property
    def center(self) -> torch.Tensor:
        return self.mean

    @property
    def stdev(self) -> torch.Tensor:
        variances = self.cov if self.separable else self.cov.diagonal()
        return self.sigma * variances.sqrt()

    def _no_gradients_reason(self) -> str:
        return ("its update depends on evolution paths and on the ranking of the whole "
                "generation, so gradients from actors cannot be averaged.")

    def _sample(self, n: int) -> torch.Tensor:
        z = torch.empty(n, self.solution_length, device=self.device, dtype=self.dtype)
        z.normal_(generator=self.generator)
        if self.separable:
            return z.mul_(self.sigma * self.d).add_(self.mean)
        return torch.addmm(self.mean, z.mul_(self.d), self.B.T, alpha=float(self.sigma))

    def _update(self, samples: torch.Tensor, fitness: torch.Tensor) -> None:
        k = cma_constants(self.solution_length, len(fitness), self.separable)
        mu = len(k.weights)
        best = torch.argsort(fitness, descending=True, stable=True)[:mu]
        weights = torch.zeros_like(fitness)
        weights[best] = torch.tensor(k.weights, device=self.device, dtype=self.dtype)
        old_mean = self.mean
        shift, second = weighted_moments(weights, samples, old_mean)
        y_w = shift / self.sigma  # weighted mean step, in units of sigma
        self.mean = old_mean + shift
        self.p_sigma = (1 - k.c_sigma) * self.p_sigma + math.sqrt(
            k.c_sigma * (2 - k.c_sigma) * k.mu_eff) * self._inverse_sqrt_cov(y_w)
        generation = self.generation + 1
        norm = float(torch.linalg.vector_norm(self.p_sigma))
        h_sigma = float(norm / math.sqrt(1 - (1 - k.c_sigma) ** (2 * generation))
                        < (1.4 + 2 / (self.solution_length + 1)) * k.chi_n)
        self.p_c = (1 - k.c_c) * self.p_c + h_sigma * math.sqrt(
            k.c_c * (2 - k.c_c) * k.mu_eff) * y_w
        decay = 1 - k.c_1 - k.c_mu + (1 - h_sigma) * k.c_1 * k.c_c * (2 - k.c_c)
        if self.separable:
            rank_mu = second / self.sigma.square()
            self.cov = decay * self.cov + k.c_1 * self.p_c.square() + k.c_mu * rank_mu
            self.d = self.cov.clamp(min=torch.finfo(self.dtype).tiny).sqrt()
        else:
            steps = (samples[best] - old_mean) / self.sigma  # (mu, D)
            rank_mu = (steps.T * weights[best]) @ steps
            self.cov = (decay * self.cov + k.c_1 * torch.outer(self.p_c, self.p_c)
                        + k.c_mu * rank_mu)
            self._maybe_decompose(k, generation)
        self.sigma = self.sigma * math.exp(k.c_sigma / k.d_sigma * (norm / k.chi_n - 1))

    def _inverse_sqrt_cov(self, vector: torch.Tensor) -> torch.Tensor:
        if self.separable:
            return vector / self.d
        return self.B @ ((self.B.T @ vector) / self.d)

    def _maybe_decompose(self, k: CMAConstants, generation: int) -> None:
        # Decomposing every generation costs D^3; Hansen's lazy schedule keeps it O(D^2).
        gap = 1.0 / (10 * self.solution_length * (k.c_1 + k.c_mu))
        if generation - self.eigen_generation < gap:
            return
        self.eigen_generation = generation
        self.cov = torch.triu(self.cov) + torch.triu(self.cov, 1).T
        eigenvalues, self.B = torch.linalg.eigh(self.cov)
        self.d = eigenvalues.clamp(min=torch.finfo(self.dtype).tiny).sqrt()

    _STATE = ("mean", "sigma", "p_sigma", "p_c", "cov", "B", "d", "eigen_generation")

    def _state(self) -> dict[str, Any]:  # references: _update only assigns new tensors
        return {name: getattr(self, name) for name in self._STATE}

    def _load_state(self, state: Mapping[str, Any]) -> None:
        for name in self._STATE:
            value = state[name]
            if torch.is_tensor(value):
                value = value.to(device=self.device, dtype=self.dtype)
            setattr(self, name, _copy(value))


class SepCMAES(CMAES):
    """sep-CMA-ES: CMA-ES with a diagonal covariance (`separable=True`)."""

    name = "sep_cmaes"
    DEFAULTS = {"separable": True}


def _copy(value: Any) -> Any:
    return value.clone() if torch.is_tensor(value) else value
