"""ARS: augmented random search (Mania, Guy & Recht 2018, arXiv:1803.07055).

A generation draws N directions eps_k ~ N(0, I) and evaluates theta + noise eps_k and
theta - noise eps_k (popsize 2N, rows 2k and 2k+1). It keeps the b directions with the largest
max(r+, r-) over the whole generation and steps

    theta += step_size / (b sigma_R) * sum_k (r+_k - r-_k) eps_k

where sigma_R is the standard deviation of the 2b returns kept: the weights put
``step_size (r+_k - r-_k) / (b sigma_R)`` on row 2k of each kept direction (0 elsewhere), and
the update is ``theta += sum_i w_i eps_i``. The noise stays fixed.
The paper's variants: V1 is this on raw observations, V2 adds observation normalization
(`problem.observation_normalization=true`); "-t" keeps b < N directions (`top_directions`).
With adaptive popsize a generation has more directions than N; b stays as set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from neurorun.algorithms.base import Sums, Weights
from neurorun.algorithms.gaussian import SeparableSearch
from neurorun.algorithms.options import (
    SearchOptions,
    as_numbers,
    as_vector,
    check_center,
    require_count,
    require_positive,
    require_stdev,
)


@dataclass(frozen=True)
class ARSOptions(SearchOptions):
    step_size: float | None = None  # alpha
    num_directions: int | None = None  # N (None: popsize / 2)
    top_directions: int | None = None  # b (None: every direction)
    noise: float | None = None  # nu, the fixed exploration stdev


class ARS(SeparableSearch):
    name = "ars"
    title = "ARS"  # as README names it
    Options = ARSOptions
    SUMS = {"w": ("eps",)}
    STEP_SIZES = ("noise",)  # its exploration, fixed: a small attempt explores less
    POPSIZE_OPTIONS = ("num_directions",)

    def __init__(self, solution_length: int, **kwargs: Any):
        super().__init__(solution_length, **kwargs)
        self.mirrored = True
        self.num_directions = self.popsize // 2

    @classmethod
    def check(cls, options: Any, popsize: int | None) -> None:
        directions, top = options.num_directions, options.top_directions
        require_count("num_directions", directions)
        if directions is not None and popsize is not None and popsize != 2 * directions:
            raise ValueError(
                f"popsize={popsize} with num_directions={directions}; ARS evaluates each "
                f"direction both ways, so popsize is {2 * directions}. Fix: popsize=null (it "
                "follows num_directions), or drop num_directions.")
        if directions is None and popsize is not None and popsize % 2:
            raise ValueError(
                f"popsize={popsize}: ARS evaluates each direction both ways, so popsize is "
                f"even (2 x num_directions). Fix: popsize={popsize + 1}, or popsize=null "
                "with num_directions set (popsize then follows).")
        super().check(options, popsize)
        require_count("top_directions", top)
        require_positive("step_size", options.step_size)
        known = directions if popsize is None else popsize // 2
        if top is not None and known is not None and top > known:
            raise ValueError(
                f"top_directions={top} > num_directions={known}; expected "
                "b <= N (the best b of the N directions are kept). Fix: lower top_directions, "
                "raise num_directions, or top_directions=null for all of them.")

    @classmethod
    def check_exploration(cls, options: Any) -> None:
        check_center(options.start)
        start = options.start
        if start.stdev_init is not None or start.radius_init is not None:
            raise ValueError(
                f"stdev_init={start.stdev_init!r}, radius_init={start.radius_init!r}: ARS "
                "explores with its fixed `noise`. Fix: set noise instead (and null those).")
        require_positive("noise", options.noise)
        require_stdev("noise", options.noise, as_numbers(options.noise, "noise"))

    @classmethod
    def default_popsize(cls, options: ARSOptions, solution_length: int | None) -> int | None:
        directions = options.num_directions
        if directions is None:
            return super().default_popsize(options, solution_length)
        return 2 * directions  # check() refuses a count below 1 before its popsize

    def _initial_stdev(self) -> torch.Tensor:
        return as_vector(float(self.options.noise), "noise", self.solution_length, self.device,
                         self.dtype)

    def _learning_rates(self) -> tuple[float, float]:
        return 1.0, 0.0  # the step size is in the weights; the noise stays fixed

    def weights(self, fitness: torch.Tensor, norms: torch.Tensor | None) -> Weights:
        plus, minus = fitness.view(-1, 2).unbind(dim=1)
        kept = len(plus) if self.options.top_directions is None else self.options.top_directions
        keep = torch.topk(torch.maximum(plus, minus), kept).indices
        sigma_r = float(torch.cat([plus[keep], minus[keep]]).std(correction=0))
        weights = torch.zeros_like(fitness)
        if sigma_r > 0:  # every kept return equal: no direction is better than its mirror
            scale = float(self.options.step_size) / (kept * sigma_r)
            weights[2 * keep] = (plus[keep] - minus[keep]) * scale
        return {"w": weights}

    def update(self, sums: Sums, weights: Weights, fitness: torch.Tensor) -> None:
        self.mu = self.mu + sums["w.eps"]
