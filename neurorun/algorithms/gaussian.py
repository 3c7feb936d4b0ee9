"""Algorithms that follow search gradients of a Gaussian distribution (PGPE, CEM, SNES, XNES)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from neurorun.algorithms.base import SearchAlgorithm
from neurorun.algorithms.distributions import SeparableGaussian, SymmetricSeparableGaussian
from neurorun.algorithms.optimizers import make_optimizer
from neurorun.algorithms.options import (
    StepOptions,
    as_vector,
    initial_stdev,
    require_positive,
)
from neurorun.algorithms.ranking import check_ranking, rank


class DistributionSearch(SearchAlgorithm):
    """A search whose state is `self.distribution` (and `self.optimizer`, if it has one):
    samples come from the distribution, its mean is the center."""

    distribution: Any
    optimizer: Any = None

    @property
    def center(self) -> torch.Tensor:
        return self.distribution.mu

    @property
    def stdev(self) -> torch.Tensor:
        return self.distribution.stdev

    def _sample(self, n: int) -> torch.Tensor:
        return self.distribution.sample(n, self.generator)

    def _state(self) -> dict[str, Any]:
        optimizer = None if self.optimizer is None else self.optimizer.state_dict()
        return {"distribution": self.distribution.state_dict(), "optimizer": optimizer}

    def _load_state(self, state: Mapping[str, Any]) -> None:
        self.distribution.load_state_dict(state["distribution"])
        if self.optimizer is not None:
            self.optimizer.load_state_dict(state["optimizer"])


class GaussianSearchAlgorithm(DistributionSearch):
    """ask/tell on top of a distribution: rank, compute gradients, step, bound the stdev.

    Subclasses set `DISTRIBUTION` (mirrored instead where their options say `symmetric`) and
    may override `_learning_rates()` for their defaults.
    """

    DISTRIBUTION: ClassVar[type] = SeparableGaussian

    def __init__(self, solution_length: int, **kwargs: Any):
        super().__init__(solution_length, **kwargs)
        start = self.options.start
        kind = {"device": self.device, "dtype": self.dtype}
        if start.center_init is None:
            center = torch.zeros(solution_length, **kind)
        else:
            center = as_vector(start.center_init, "center_init", solution_length, **kind)
        stdev = initial_stdev(start, solution_length, **kind)
        self.distribution = self._make_distribution(center, stdev)
        self.center_lr, self.stdev_lr = self._learning_rates()
        require_positive("center_learning_rate", self.center_lr)
        step = getattr(self.options, "step", None)
        self.ranking = check_ranking(step.ranking_method if step else None)
        if step is not None and self.popsize < 2 and self.ranking != "raw":
            raise ValueError(
                f"popsize={self.popsize} with ranking_method={self.ranking!r}: a single sample "
                "ranks to 0, so the center would never move. Fix: popsize >= 2 (or "
                "ranking_method=raw).")
        if getattr(self.options, "symmetric", False):
            require_even_popsize(self.popsize, "symmetric")
        self.optimizer = make_optimizer(
            step.optimizer if step else None, step.optimizer_config if step else None,
            lr=self.center_lr, length=solution_length, **kind,
        )
        self._stdev_bounds = self._resolve_stdev_limits()

    def _make_distribution(self, center: torch.Tensor, stdev: torch.Tensor):
        mirrored = getattr(self.options, "symmetric", False)
        return (SymmetricSeparableGaussian if mirrored else self.DISTRIBUTION)(center, stdev)

    def _learning_rates(self) -> tuple[float, float]:
        """(center, stdev) learning rates; by default both are required options (each > 0)."""
        step = self.options.step
        for name in ("center_learning_rate", "stdev_learning_rate"):
            require_positive(name, getattr(step, name))
        return float(step.center_learning_rate), float(step.stdev_learning_rate)

    def _resolve_stdev_limits(self) -> dict[str, torch.Tensor] | None:
        limits = getattr(self.options, "limits", None)
        if limits is None:
            return None
        bounds = {}
        for name in ("stdev_min", "stdev_max", "stdev_max_change"):
            value = getattr(limits, name)
            if value is not None:
                bounds[name] = as_vector(value, name, self.solution_length, self.device, self.dtype)
        change = bounds.get("stdev_max_change")
        if change is not None and not bool(torch.all((change > 0) & (change < 1))):
            raise ValueError(
                f"stdev_max_change={limits.stdev_max_change!r}; expected values in (0, 1) "
                "(the largest relative change per generation). Fix: e.g. 0.2, or null for none."
            )
        if "stdev_min" in bounds and "stdev_max" in bounds and bool(
            torch.any(bounds["stdev_min"] > bounds["stdev_max"])
        ):
            raise ValueError(
                f"stdev_min={limits.stdev_min!r} exceeds stdev_max={limits.stdev_max!r}. "
                "Fix: make stdev_min <= stdev_max."
            )
        return bounds or None

    def _weights(self, fitness: torch.Tensor) -> torch.Tensor:
        return rank(fitness, self.ranking)

    def _gradients(self, samples: torch.Tensor, fitness: torch.Tensor) -> dict[str, torch.Tensor]:
        return self.distribution.compute_gradients(samples, self._weights(fitness), self.ranking)

    def _update(self, samples: torch.Tensor, fitness: torch.Tensor) -> None:
        self.apply_gradients(self._gradients(samples, fitness))

    def compute_gradients(self, samples: torch.Tensor, fitness) -> dict[str, torch.Tensor]:
        """Search gradients from (samples, fitness in the objective's sense); changes nothing."""
        fitness = self._check_fitness(fitness, len(samples))
        return self._gradients(samples, fitness if self.objective_sense == "max" else -fitness)

    def apply_gradients(self, gradients: Mapping[str, torch.Tensor]) -> None:
        """Follow (averaged) gradients: optimizer or plain step for the center, then the stdev."""
        old_stdev = self.distribution.stdev
        self.distribution.update(gradients, self._center_step, self.stdev_lr)
        if self._stdev_bounds is not None:
            self.distribution.sigma = self._bounded(old_stdev, self.distribution.sigma)

    def _center_step(self, gradient: torch.Tensor) -> torch.Tensor:
        if self.optimizer is None:
            return self.center_lr * gradient
        return self.optimizer.step(gradient)

    def _bounded(self, old: torch.Tensor, new: torch.Tensor) -> torch.Tensor:
        bounds = self._stdev_bounds
        if "stdev_max_change" in bounds:
            change = bounds["stdev_max_change"]
            new = torch.minimum(torch.maximum(new, old * (1 - change)), old * (1 + change))
        if "stdev_min" in bounds:
            new = torch.maximum(new, bounds["stdev_min"])
        if "stdev_max" in bounds:
            new = torch.minimum(new, bounds["stdev_max"])
        return new


def require_even_popsize(popsize: int, key: str) -> None:
    """Mirrored sampling evaluates center + e and center - e: refuse an odd popsize."""
    if popsize % 2:
        raise ValueError(
            f"popsize={popsize} with {key}=true; expected an even popsize (solutions come in "
            f"mirrored pairs). Fix: use an even popsize (e.g. {popsize + 1}) or {key}=false.")


@dataclass(frozen=True)
class NESStepOptions(StepOptions):
    """StepOptions plus whether a given stdev learning rate multiplies the default one."""

    ranking_method: str | None = "nes"
    scale_learning_rate: bool = True


def nes_popsize(solution_length: int) -> int:
    """The NES default population size, 4 + floor(3 ln D)."""
    return 4 + math.floor(3 * math.log(solution_length))


class NESAlgorithm(GaussianSearchAlgorithm):
    """SNES/XNES defaults: popsize 4 + floor(3 ln D); center lr 1; a given stdev lr scales
    `default_stdev_lr(D)` unless `scale_learning_rate` is false."""

    @staticmethod
    def default_stdev_lr(dim: int) -> float:
        raise NotImplementedError

    def default_popsize(self, solution_length: int) -> int:
        return nes_popsize(solution_length)

    def _learning_rates(self) -> tuple[float, float]:
        step = self.options.step
        default = self.default_stdev_lr(self.solution_length)
        center = 1.0 if step.center_learning_rate is None else float(step.center_learning_rate)
        if step.stdev_learning_rate is None:
            return center, default
        require_positive("stdev_learning_rate", step.stdev_learning_rate)
        factor = default if step.scale_learning_rate else 1.0
        return center, float(step.stdev_learning_rate) * factor
