"""SNES: separable natural evolution strategies (Schaul, Glasmachers & Schmidhuber 2011).

Defaults: popsize 4 + floor(3 ln D), nes ranking, center lr 1, stdev lr 0.2 (3 + ln D) / sqrt(D).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from neurorun.algorithms.distributions import ExpSeparableGaussian
from neurorun.algorithms.gaussian import NESAlgorithm, NESStepOptions
from neurorun.algorithms.options import SearchOptions, StdevLimits, group


@dataclass(frozen=True)
class SNESOptions(SearchOptions):
    step: NESStepOptions = group(NESStepOptions)
    limits: StdevLimits = group(StdevLimits)


class SNES(NESAlgorithm):
    name = "snes"
    Options = SNESOptions
    DISTRIBUTION = ExpSeparableGaussian

    @staticmethod
    def default_stdev_lr(dim: int) -> float:
        return 0.2 * (3 + math.log(dim)) / math.sqrt(dim)
