"""What the separable Gaussian searches share (PGPE, CEM, SNES, OpenAI-ES, ARS): a center
``mu``, a per-parameter stdev ``sigma``, samples ``mu + sigma * eps``, a center optimizer and
bounds on the stdev. Each algorithm's own file holds its weights and its update.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from neurorun.algorithms.base import SearchAlgorithm
from neurorun.algorithms.optimizers import make_optimizer, optimizer_settings
from neurorun.algorithms.options import (
    StdevLimits,
    StepOptions,
    as_numbers,
    as_vector,
    check_center,
    check_initial_stdev,
    initial_center,
    initial_stdev,
    require_positive,
    require_stdev,
)
from neurorun.algorithms.ranking import check_ranking, rank


class SeparableSearch(SearchAlgorithm):
    """N(mu, diag(sigma^2)); subclasses give ``weights`` and ``update``.

    Options read here: ``start`` (center_init, stdev_init / radius_init), ``step`` (learning
    rates, optimizer, ranking; when the algorithm has that group), ``limits`` (stdev bounds,
    likewise) and ``symmetric`` (mirrored sampling).
    """

    def __init__(self, solution_length: int, **kwargs: Any):
        super().__init__(solution_length, **kwargs)
        kind = {"device": self.device, "dtype": self.dtype}
        self.mu = initial_center(self.options.start, solution_length, **kind)
        self.sigma = self._initial_stdev()
        self.mirrored = bool(getattr(self.options, "symmetric", False))
        step = getattr(self.options, "step", None)
        self.ranking = check_ranking(step.ranking_method if step else None)
        self.center_lr, self.stdev_lr = self._learning_rates()
        self.optimizer = make_optimizer(
            step.optimizer if step else None, step.optimizer_config if step else None,
            lr=self.center_lr, length=solution_length, **kind)
        self._stdev_bounds = self._stdev_limits()

    @classmethod
    def check(cls, options: Any, popsize: int | None) -> None:
        super().check(options, popsize)
        cls.check_exploration(options)
        if popsize is not None and getattr(options, "symmetric", False):
            require_even_popsize(popsize, "symmetric")
        limits = getattr(options, "limits", None)
        if limits is not None:
            check_stdev_limits(limits)
        step = getattr(options, "step", None)
        if step is None:
            return
        ranking = check_ranking(step.ranking_method)
        cls.check_learning_rates(step)
        if popsize is not None and popsize < 2 and ranking != "raw":
            raise ValueError(
                f"popsize={popsize} with ranking_method={ranking!r}: a single sample ranks to "
                "0, so the center would never move. Fix: popsize >= 2 (or ranking_method=raw).")
        if step.optimizer is not None:
            optimizer_settings(step.optimizer, step.optimizer_config,
                               lr=1.0 if step.center_learning_rate is None
                               else step.center_learning_rate)
        elif step.optimizer_config:
            raise ValueError(
                f"optimizer_config={dict(step.optimizer_config)!r} with optimizer=null: plain "
                "steps take no optimizer settings. Fix: optimizer_config=null (or the optimizer "
                "they are for).")

    @classmethod
    def check_exploration(cls, options: Any) -> None:
        """Raise a ValueError for a start it cannot search from (ARS: its own noise)."""
        check_center(options.start)
        check_initial_stdev(options.start)

    @classmethod
    def check_learning_rates(cls, step: Any) -> None:
        """Raise a ValueError for learning rates it refuses: each > 0, and required unless
        the NES rules give it a default (SNES, XNES)."""
        optional = isinstance(step, NESStepOptions)
        for name in ("center_learning_rate", "stdev_learning_rate"):
            if not (optional and getattr(step, name) is None):
                require_positive(name, getattr(step, name))

    def _initial_stdev(self) -> torch.Tensor:
        return initial_stdev(self.options.start, self.solution_length, device=self.device,
                             dtype=self.dtype)

    def _learning_rates(self) -> tuple[float, float]:
        """(center, stdev) learning rates: by default both as given."""
        step = self.options.step
        return float(step.center_learning_rate), float(step.stdev_learning_rate)

    # -- sampling ---------------------------------------------------------------------------
    @property
    def center(self) -> torch.Tensor:
        return self.mu

    @property
    def stdev(self) -> torch.Tensor:
        return self.sigma

    def samples(self, noise: torch.Tensor) -> torch.Tensor:
        return torch.addcmul(self.mu, noise, self.sigma)

    def sampling_state(self) -> dict[str, torch.Tensor]:
        return {"mu": self.mu, "sigma": self.sigma}

    # -- shared parts of the updates ------------------------------------------------------
    def ranked(self, fitness: torch.Tensor, baseline: bool = True) -> torch.Tensor:
        """``ranking_method`` applied to the fitness; without its mean (a baseline) unless the
        ranking already centers it (or ``baseline`` is False)."""
        weights = rank(fitness, self.ranking)
        if baseline and self.ranking not in ("centered", "normalized"):
            weights = weights - weights.mean()
        return weights

    def step_center(self, gradient: torch.Tensor) -> None:
        """Move the center along an ascent gradient: the optimizer's step, or lr x gradient."""
        step = self.center_lr * gradient if self.optimizer is None else self.optimizer.step(
            gradient)
        self.mu = self.mu + step

    def set_stdev(self, new: torch.Tensor) -> None:
        """The new stdev, within stdev_min / stdev_max and at most stdev_max_change away."""
        bounds = self._stdev_bounds
        if bounds is not None:
            if "stdev_max_change" in bounds:
                change = bounds["stdev_max_change"]
                new = torch.minimum(torch.maximum(new, self.sigma * (1 - change)),
                                    self.sigma * (1 + change))
            if "stdev_min" in bounds:
                new = torch.maximum(new, bounds["stdev_min"])
            if "stdev_max" in bounds:
                new = torch.minimum(new, bounds["stdev_max"])
        self.sigma = new

    def _stdev_limits(self) -> dict[str, torch.Tensor] | None:
        """The given stdev limits as (D,) vectors (None: no limits)."""
        limits = getattr(self.options, "limits", None)
        if limits is None:
            return None
        bounds = {name: as_vector(getattr(limits, name), name, self.solution_length,
                                  self.device, self.dtype)
                  for name in ("stdev_min", "stdev_max", "stdev_max_change")
                  if getattr(limits, name) is not None}
        return bounds or None

    # -- checkpoints ------------------------------------------------------------------------
    def _state(self) -> dict[str, Any]:  # references: updates assign new tensors
        optimizer = None if self.optimizer is None else self.optimizer.state_dict()
        return {"mu": self.mu, "sigma": self.sigma, "optimizer": optimizer}

    def _load_state(self, state: Mapping[str, Any]) -> None:
        self.mu = state["mu"].to(self.device, self.dtype).clone()
        self.sigma = state["sigma"].to(self.device, self.dtype).clone()
        if self.optimizer is not None:
            self.optimizer.load_state_dict(state["optimizer"])


def check_stdev_limits(limits: StdevLimits) -> None:
    """Raise a ValueError for stdev limits no search can keep: a bound that is not a stdev, a
    largest change outside (0, 1), or stdev_min above stdev_max."""
    given = {name: as_numbers(getattr(limits, name), name)
             for name in ("stdev_min", "stdev_max", "stdev_max_change")
             if getattr(limits, name) is not None}
    for name in ("stdev_min", "stdev_max"):  # a bound on the stdev is itself a stdev
        if name in given:
            require_stdev(name, getattr(limits, name), given[name])
    change = given.get("stdev_max_change")
    if change is not None and not bool(torch.all((change > 0) & (change < 1))):
        raise ValueError(
            f"stdev_max_change={limits.stdev_max_change!r}; expected values in (0, 1) "
            "(the largest relative change per generation). Fix: e.g. 0.2, or null for none.")
    low, high = given.get("stdev_min"), given.get("stdev_max")
    if low is not None and high is not None and (low.ndim == 0 or high.ndim == 0
                                                 or low.shape == high.shape) \
            and bool(torch.any(low > high)):
        raise ValueError(
            f"stdev_min={limits.stdev_min!r} exceeds stdev_max={limits.stdev_max!r}. "
            "Fix: make stdev_min <= stdev_max.")


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


def nes_learning_rates(step: NESStepOptions, default_stdev_lr: float) -> tuple[float, float]:
    """SNES/XNES: center lr 1 unless given; a given stdev lr scales the default one unless
    ``scale_learning_rate`` is false."""
    center = 1.0 if step.center_learning_rate is None else float(step.center_learning_rate)
    if step.stdev_learning_rate is None:
        return center, default_stdev_lr
    factor = default_stdev_lr if step.scale_learning_rate else 1.0
    return center, float(step.stdev_learning_rate) * factor
