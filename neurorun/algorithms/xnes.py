"""XNES: exponential natural evolution strategies (Glasmachers et al. 2010).

Full covariance A A^T, so memory and time grow with D^2 (D^3 for the matrix exponential);
for policy-sized D use SNES or sep-CMA-ES. Defaults: popsize 4 + floor(3 ln D), nes ranking,
center lr 1, covariance lr 0.6 (3 + ln D) / (D sqrt D).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from neurorun.algorithms.distributions import ExpGaussian
from neurorun.algorithms.gaussian import NESAlgorithm, NESStepOptions
from neurorun.algorithms.options import SearchOptions, group
from neurorun.algorithms.sizing import check_full_covariance


@dataclass(frozen=True)
class XNESOptions(SearchOptions):
    step: NESStepOptions = group(NESStepOptions)


class XNES(NESAlgorithm):
    name = "xnes"
    Options = XNESOptions
    DISTRIBUTION = ExpGaussian

    def __init__(self, solution_length: int, **kwargs):
        check_full_covariance("xnes", solution_length, kwargs.get("dtype"), alternative="snes")
        super().__init__(solution_length, **kwargs)

    @staticmethod
    def default_stdev_lr(dim: int) -> float:
        return 0.6 * (3 + math.log(dim)) / (dim * math.sqrt(dim))
