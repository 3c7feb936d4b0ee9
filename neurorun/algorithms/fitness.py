"""A generation's fitness as the algorithms take it (one finite value per sample asked) and
its summary (the metrics' population columns)."""

from __future__ import annotations

from typing import Any, TypedDict

import torch

from neurorun.common.sense import maximized


def check_fitness(fitness: Any, expected: int, device: torch.device,
                  dtype: torch.dtype) -> torch.Tensor:
    """``fitness`` as a flat tensor; ValueError unless it holds ``expected`` values, none NaN."""
    fitness = torch.as_tensor(fitness, device=device, dtype=dtype).reshape(-1)
    if len(fitness) != expected:
        raise ValueError(
            f"fitness has {len(fitness)} values; expected {expected} (one per solution asked "
            "since the last tell). Fix: evaluate every asked solution, in order.")
    nan = torch.isnan(fitness)
    if bool(nan.any()):
        where = nan.nonzero().flatten()[:5].tolist()
        raise ValueError(
            f"fitness contains NaN at indices {where}; expected finite numbers. Fix: find what "
            "makes those evaluations NaN, or map them to a very bad finite fitness.")
    return fitness


class PopulationStats(TypedDict):
    """One generation's fitness summary: the metrics' population columns."""

    popsize: int
    mean_eval: float
    median_eval: float
    pop_best_eval: float


def population_stats(fitness: torch.Tensor, sense: str) -> PopulationStats:
    """popsize, mean_eval, median_eval (halfway between the middle two of an even count) and
    pop_best_eval (the max, or the min when minimizing) of one generation's fitness."""
    values = fitness.double()
    return PopulationStats(
        popsize=len(fitness),
        mean_eval=float(values.mean()),
        median_eval=float(values.quantile(0.5)),
        # the max of the maximized values, in the fitness' own sign again
        pop_best_eval=float(maximized(sense, maximized(sense, values).max())),
    )
