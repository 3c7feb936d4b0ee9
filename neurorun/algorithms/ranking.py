"""Fitness shaping: turn raw fitness (higher is better) into the weights of a search gradient.

`centered`: ranks mapped linearly onto [-0.5, 0.5] (Salimans et al. 2017).
`linear`: ranks mapped linearly onto [0, 1].
`nes`: the NES utilities max(0, ln(n/2 + 1) - ln k) / sum - 1/n for rank k (1 = best)
(Wierstra et al. 2014).
`normalized`: (f - mean) / stdev, with the unbiased stdev.
`raw`: the fitness itself.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch


def _ranks(fitness: torch.Tensor) -> torch.Tensor:
    """0 for the worst solution, n - 1 for the best (ties: first seen ranks lower)."""
    order = torch.argsort(fitness, stable=True)
    ranks = torch.empty_like(order)
    ranks[order] = torch.arange(len(fitness), device=fitness.device)
    return ranks.to(fitness.dtype)


def centered(fitness: torch.Tensor) -> torch.Tensor:
    n = len(fitness)
    if n == 1:
        return torch.zeros_like(fitness)
    return _ranks(fitness) / (n - 1) - 0.5


def linear(fitness: torch.Tensor) -> torch.Tensor:
    n = len(fitness)
    if n == 1:
        return torch.zeros_like(fitness)
    return _ranks(fitness) / (n - 1)


def nes(fitness: torch.Tensor) -> torch.Tensor:
    n = len(fitness)
    position = n - _ranks(fitness)  # 1 for the best, n for the worst
    utility = (math.log(n / 2 + 1) - torch.log(position)).clamp(min=0)
    return utility / utility.sum() - 1.0 / n


def normalized(fitness: torch.Tensor) -> torch.Tensor:
    if len(fitness) == 1:
        return torch.zeros_like(fitness)
    stdev = fitness.std()
    centered_fitness = fitness - fitness.mean()
    return centered_fitness / stdev if float(stdev) > 0 else centered_fitness


def raw(fitness: torch.Tensor) -> torch.Tensor:
    return fitness.clone()


RANKINGS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "centered": centered,
    "linear": linear,
    "nes": nes,
    "normalized": normalized,
    "raw": raw,
}


def check_ranking(method: str | None) -> str:
    """`method` if it names a ranking (None means raw), else a ValueError naming the choices."""
    method = "raw" if method is None else method
    if method not in RANKINGS:
        raise ValueError(
            f"ranking_method={method!r}; expected one of {sorted(RANKINGS)}. "
            "Fix: pick one of those (or null for raw fitness)."
        )
    return method


def rank(fitness: torch.Tensor, method: str | None) -> torch.Tensor:
    """Shape (n,) fitness, higher is better, with the named ranking method."""
    return RANKINGS[check_ranking(method)](fitness)
