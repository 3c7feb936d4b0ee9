"""ARS: augmented random search (Mania, Guy & Recht 2018, arXiv:1803.07055).

A generation draws N directions d_k ~ N(0, I) and evaluates theta + noise d_k and
theta - noise d_k (popsize 2N, rows 2k and 2k+1). It keeps the b directions with the largest
max(r+, r-) and steps

    theta += step_size / (b sigma_R) * sum_k (r+_k - r-_k) d_k

where sigma_R is the standard deviation of the 2b returns kept. The noise stays fixed.
The paper's variants: V1 is this on raw observations, V2 adds observation normalization
(`problem.observation_normalization=true`); "-t" keeps b < N directions (`top_directions`).
With adaptive popsize a generation has more directions than N; b stays as set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from neurorun.algorithms.distributions import SymmetricSeparableGaussian
from neurorun.algorithms.gaussian import DistributionSearch
from neurorun.algorithms.options import (
    SearchOptions,
    as_vector,
    require_count,
    require_positive,
)


@dataclass(frozen=True)
class ARSOptions(SearchOptions):
    step_size: float | None = None  # alpha
    num_directions: int | None = None  # N (None: popsize / 2)
    top_directions: int | None = None  # b (None: every direction)
    noise: float | None = None  # nu, the fixed exploration stdev


class ARS(DistributionSearch):
    name = "ars"
    Options = ARSOptions

    def __init__(self, solution_length: int, **kwargs: Any):
        super().__init__(solution_length, **kwargs)
        options = self.options
        require_count("num_directions", options.num_directions)
        require_count("top_directions", options.top_directions)
        require_positive("step_size", options.step_size)
        require_positive("noise", options.noise)
        if options.num_directions is None and self.popsize % 2:
            raise ValueError(
                f"popsize={self.popsize}: ARS evaluates each direction both ways, so popsize is "
                "even (2 x num_directions). Fix: set num_directions (popsize then follows).")
        if options.num_directions is not None and self.popsize != 2 * options.num_directions:
            raise ValueError(
                f"popsize={self.popsize} with num_directions={options.num_directions}; ARS "
                f"evaluates each direction both ways, so popsize is {2 * options.num_directions}."
                " Fix: popsize=null (it follows num_directions), or drop num_directions.")
        self.num_directions = self.popsize // 2
        top = options.top_directions
        if top is not None and top > self.num_directions:
            raise ValueError(
                f"top_directions={top} > num_directions={self.num_directions}; expected "
                "b <= N (the best b of the N directions are kept). Fix: lower top_directions, "
                "raise num_directions, or top_directions=null for all of them.")
        start = options.start
        if start.stdev_init is not None or start.radius_init is not None:
            raise ValueError(
                f"stdev_init={start.stdev_init!r}, radius_init={start.radius_init!r}: ARS "
                "explores with its fixed `noise`. Fix: set noise instead (and null those).")
        kind = {"device": self.device, "dtype": self.dtype}
        center = (torch.zeros(solution_length, **kind) if start.center_init is None else
                  as_vector(start.center_init, "center_init", solution_length, **kind))
        noise = torch.full((solution_length,), float(options.noise), **kind)
        self.distribution = SymmetricSeparableGaussian(center, noise)

    def default_popsize(self, solution_length: int) -> int:
        directions = self.options.num_directions
        if directions is None:
            return super().default_popsize(solution_length)
        return 2 * directions

    def _update(self, samples: torch.Tensor, fitness: torch.Tensor) -> None:
        plus, minus = fitness.view(-1, 2).unbind(dim=1)
        directions = (samples[0::2] - self.center) / float(self.options.noise)  # d_k, (N, D)
        kept = len(plus) if self.options.top_directions is None else self.options.top_directions
        keep = torch.topk(torch.maximum(plus, minus), kept).indices
        sigma_r = float(torch.cat([plus[keep], minus[keep]]).std(correction=0))
        if sigma_r == 0:  # every kept return equal: no direction is better than its mirror
            return
        weights = (plus[keep] - minus[keep]) * (float(self.options.step_size) / (kept * sigma_r))
        self.distribution.mu = self.center + weights @ directions[keep]

    def _no_gradients_reason(self) -> str:
        return ("its step keeps the top directions of the whole population and divides by "
                "their returns' stdev, which no actor's share can compute.")
