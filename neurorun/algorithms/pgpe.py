"""PGPE: policy gradients with parameter-based exploration (Sehnke et al. 2010).

Defaults follow the ClipUp paper (Toklu et al. 2020): symmetric (mirrored) sampling, centered
ranking, ClipUp with max_speed = 2 x center_learning_rate, stdev_max_change = 0.2.
"""

from __future__ import annotations

from dataclasses import dataclass

from neurorun.algorithms.gaussian import GaussianSearchAlgorithm
from neurorun.algorithms.options import SearchOptions, StdevLimits, StepOptions, group


@dataclass(frozen=True)
class PGPEOptions(SearchOptions):
    step: StepOptions = group(StepOptions, optimizer="clipup", ranking_method="centered")
    limits: StdevLimits = group(StdevLimits, stdev_max_change=0.2)
    symmetric: bool = True  # mirrored pairs; popsize must then be even


class PGPE(GaussianSearchAlgorithm):
    name = "pgpe"
    Options = PGPEOptions
