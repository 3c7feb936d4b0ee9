"""CMA-ES with the defaults of Hansen's 2016 tutorial (arXiv:1604.00772), negative
recombination weights included (active CMA-ES), and sep-CMA-ES (Ros & Hansen 2008), whose
diagonal covariance makes it linear in D for policy-sized problems.

A generation of lambda samples ``m + sigma y_i``, ``y_i = B diag(d) eps_i`` (sep: ``d * eps_i``),
ranked over the whole generation (best first) with weights ``w_i`` (positive for the best
mu = lambda // 2, negative for the rest; see ``cma_constants``):

    <y>   = sum_{w_i > 0} w_i y_i                 m <- m + sigma <y>
    p_s  <- (1 - c_s) p_s + sqrt(c_s (2 - c_s) mu_eff) C^-1/2 <y>
    p_c  <- (1 - c_c) p_c + h_s sqrt(c_c (2 - c_c) mu_eff) <y>
    C    <- (1 + c_1 delta(h_s) - c_1 - c_mu sum_i w_i) C + c_1 p_c p_c^T
            + c_mu sum_i w_i' y_i y_i^T,  w_i' = w_i (w_i >= 0), w_i D / |C^-1/2 y_i|^2 (w_i < 0)
    sigma <- sigma exp(c_s / d_s (|p_s| / E|N(0, I)| - 1))

In noise terms ``C^-1/2 y_i = B eps_i``, ``|C^-1/2 y_i| = |eps_i|``: the update reads
``sum_i w_i eps_i`` (positive weights) and ``sum_i w_i' eps_i^2`` (sep) or
``sum_i w_i' eps_i eps_i^T`` (full). Full CMA-ES keeps D x D matrices and is refused where they
would not fit (use `sep_cmaes`), and in distributed mode.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import torch

from neurorun.algorithms.base import SearchAlgorithm, Sums, Weights
from neurorun.algorithms.covariance_memory import check_full_covariance
from neurorun.algorithms.gaussian import nes_popsize
from neurorun.algorithms.options import (
    SearchOptions,
    check_center,
    check_initial_stdev,
    initial_center,
    initial_stdev,
)

MIN_POPSIZE = 4  # the smallest lambda whose weights (cma_constants) are defined


@dataclass(frozen=True)
class CMAESOptions(SearchOptions):
    separable: bool = False  # diagonal covariance (sep-CMA-ES)


@dataclass(frozen=True)
class CMAConstants:
    """Strategy parameters for dimension D and population size lambda (the tutorial's)."""

    weights: tuple[float, ...]  # lambda recombination weights, best first (negative at the end)
    mu_eff: float
    c_sigma: float
    d_sigma: float
    c_c: float
    c_1: float
    c_mu: float
    chi_n: float  # E||N(0, I)||


def raw_weights(n: int) -> list[float]:
    """The tutorial's w'_i = ln((n + 1) / 2) - ln i, i = 1..n: positive for the best half."""
    return [math.log((n + 1) / 2) - math.log(i) for i in range(1, n + 1)]


def variance_effective(weights: list[float]) -> float:
    """(sum w)^2 / sum w^2."""
    return sum(weights) ** 2 / sum(w * w for w in weights)


def recombination_weights(n: int, dim: int, c_1: float, c_mu: float) -> tuple[float, ...]:
    """The positive weights summing to 1, then the negative ones scaled to sum to
    -min(alpha_mu^-, alpha_mueff^-, alpha_posdef^-) (the tutorial's equation 53)."""
    raw = raw_weights(n)
    positive, negative = [w for w in raw if w > 0], [w for w in raw if w < 0]
    weights = [w / sum(positive) for w in raw if w >= 0]
    if negative:
        scale = min(1 + c_1 / c_mu,  # alpha_mu^-: no decay of C from the weights
                    1 + 2 * variance_effective(negative) / (variance_effective(positive) + 2),
                    (1 - c_1 - c_mu) / (dim * c_mu))  # alpha_posdef^-
        weights += [scale * w / -sum(negative) for w in negative]
    return tuple(weights)


@lru_cache(maxsize=64)
def cma_constants(dim: int, n: int, separable: bool) -> CMAConstants:
    """The tutorial's defaults (its Table 1 and equations 49-58): alpha_cov = 2, c_m = 1."""
    mu_eff = variance_effective([w for w in raw_weights(n) if w > 0])
    c_1 = 2 / ((dim + 1.3) ** 2 + mu_eff)
    c_mu = min(1 - c_1, 2 * (mu_eff - 2 + 1 / mu_eff) / ((dim + 2) ** 2 + mu_eff))
    if separable:  # a diagonal has D, not D^2 / 2, entries to learn: learn faster
        c_1 *= (dim + 2) / 3
        c_mu = min(1 - c_1, c_mu * (dim + 2) / 3)
    weights = recombination_weights(n, dim, c_1, c_mu)
    c_sigma = (mu_eff + 2) / (dim + mu_eff + 5)
    d_sigma = 1 + 2 * max(0.0, math.sqrt((mu_eff - 1) / (dim + 1)) - 1) + c_sigma
    c_c = (4 + mu_eff / dim) / (dim + 4 + 2 * mu_eff / dim)
    chi_n = math.sqrt(dim) * (1 - 1 / (4 * dim) + 1 / (21 * dim * dim))
    return CMAConstants(weights, mu_eff, c_sigma, d_sigma, c_c, c_1, c_mu, chi_n)


class CMAES(SearchAlgorithm):
    name = "cmaes"
    title = "CMA-ES (active)"  # as README names it
    Options = CMAESOptions
    NEEDS_NORMS = True  # negative weights are scaled by D / |eps_i|^2
    distributable = False  # D x D sums and matrices; sep_cmaes distributes

    def __init__(self, solution_length: int, **kwargs: Any):
        separable = kwargs.get("separable", self.DEFAULTS.get("separable", False))
        if not separable:
            check_full_covariance("cmaes", solution_length, kwargs.get("dtype"),
                                  alternative="sep_cmaes")
        super().__init__(solution_length, **kwargs)
        self.separable = bool(self.options.separable)
        self.SUMS = {"mean": ("eps",), "cov": ("eps2",) if self.separable else ("outer",)}
        kind = {"device": self.device, "dtype": self.dtype}
        start = self.options.start
        stdev = initial_stdev(start, solution_length, **kind)
        self.mean = initial_center(start, solution_length, **kind)
        self.sigma = stdev.max()  # scalar step size; per-coordinate shape goes into C
        scale = (stdev / self.sigma).square()
        self.p_sigma = torch.zeros(solution_length, **kind)
        self.p_c = torch.zeros(solution_length, **kind)
        # separable: cov is the diagonal (D,); full: cov (D, D) = B diag(d^2) B^T
        self.cov = scale if self.separable else torch.diag(scale)
        self.B = None if self.separable else torch.eye(solution_length, **kind)
        self.d = scale.sqrt()
        self.eigen_generation = 0

    @classmethod
    def check(cls, options: CMAESOptions, popsize: int | None) -> None:
        super().check(options, popsize)
        check_center(options.start)
        check_initial_stdev(options.start)
        # fewer: mu_eff = 1, c_mu = 0 and the weights divide by 0
        if popsize is not None and popsize < MIN_POPSIZE:
            raise ValueError(
                f"popsize={popsize}: {cls.name} needs popsize >= {MIN_POPSIZE} (at least "
                "two positive recombination weights). Fix: popsize=null (4 + 3 ln D) or "
                f"popsize >= {MIN_POPSIZE}.")

    @classmethod
    def default_popsize(cls, options: Any, solution_length: int | None) -> int | None:
        return None if solution_length is None else nes_popsize(solution_length)

    @property
    def center(self) -> torch.Tensor:
        return self.mean

    @property
    def stdev(self) -> torch.Tensor:
        variances = self.cov if self.separable else self.cov.diagonal()
        return self.sigma * variances.sqrt()

    def samples(self, noise: torch.Tensor) -> torch.Tensor:
        if self.separable:
            return torch.addcmul(self.mean, noise, self.sigma * self.d)
        return torch.addmm(self.mean, noise * self.d, self.B.T, alpha=float(self.sigma))

    def sampling_state(self) -> dict[str, torch.Tensor]:
        state = {"mean": self.mean, "sigma": self.sigma, "d": self.d}
        return state if self.separable else {**state, "B": self.B}

    def weights(self, fitness: torch.Tensor, norms: torch.Tensor | None) -> Weights:
        k = cma_constants(self.solution_length, len(fitness), self.separable)
        order = torch.argsort(fitness, descending=True, stable=True)
        ranked = torch.zeros_like(fitness)
        ranked[order] = torch.tensor(k.weights, device=self.device, dtype=self.dtype)
        active = torch.where(ranked < 0, ranked * self.solution_length / norms, ranked)
        return {"mean": ranked.clamp(min=0), "cov": active, "all": ranked}

    def update(self, sums: Sums, weights: Weights, fitness: torch.Tensor) -> None:
        k = cma_constants(self.solution_length, len(fitness), self.separable)
        mean_noise = sums["mean.eps"]  # sum_{w>0} w_i eps_i
        if self.separable:
            y_w, whitened = self.d * mean_noise, mean_noise
        else:
            whitened = self.B @ mean_noise
            y_w = self.B @ (self.d * mean_noise)
        self.mean = self.mean + self.sigma * y_w
        self.p_sigma = (1 - k.c_sigma) * self.p_sigma + math.sqrt(
            k.c_sigma * (2 - k.c_sigma) * k.mu_eff) * whitened
        generation = self.generation + 1
        norm = float(torch.linalg.vector_norm(self.p_sigma))
        h_sigma = float(norm / math.sqrt(1 - (1 - k.c_sigma) ** (2 * generation))
                        < (1.4 + 2 / (self.solution_length + 1)) * k.chi_n)
        self.p_c = (1 - k.c_c) * self.p_c + h_sigma * math.sqrt(
            k.c_c * (2 - k.c_c) * k.mu_eff) * y_w
        decay = (1 + k.c_1 * (1 - h_sigma) * k.c_c * (2 - k.c_c) - k.c_1
                 - k.c_mu * float(weights["all"].sum()))
        if self.separable:
            rank_mu = self.d.square() * sums["cov.eps2"]
            self.cov = decay * self.cov + k.c_1 * self.p_c.square() + k.c_mu * rank_mu
            self.d = self.cov.clamp(min=torch.finfo(self.dtype).tiny).sqrt()
        else:
            scaled = self.B * self.d  # B diag(d)
            rank_mu = scaled @ sums["cov.outer"] @ scaled.T
            self.cov = (decay * self.cov + k.c_1 * torch.outer(self.p_c, self.p_c)
                        + k.c_mu * rank_mu)
            self._maybe_decompose(k, generation)
        self.sigma = self.sigma * math.exp(k.c_sigma / k.d_sigma * (norm / k.chi_n - 1))

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

    def _state(self) -> dict[str, Any]:  # references: update only assigns new tensors
        return {name: getattr(self, name) for name in self._STATE}

    def _load_state(self, state: Mapping[str, Any]) -> None:
        for name in self._STATE:
            value = state[name]
            if torch.is_tensor(value):
                value = value.to(device=self.device, dtype=self.dtype).clone()
            setattr(self, name, value)


class SepCMAES(CMAES):
    """sep-CMA-ES: CMA-ES with a diagonal covariance (`separable=True`)."""

    name = "sep_cmaes"
    title = "sep-CMA-ES"  # as README names it
    DEFAULTS = {"separable": True}
    distributable = True

    @classmethod
    def check(cls, options: CMAESOptions, popsize: int | None) -> None:
        super().check(options, popsize)
        if not options.separable:  # full CMA-ES, filed under sep_cmaes
            raise ValueError("separable=false: sep_cmaes is CMA-ES with a diagonal covariance; "
                             "the full one is algo=cmaes. Fix: algo=cmaes, or leave separable "
                             "out.")
