"""Adaptive popsize: a generation samples rounds of ``popsize`` until it made
``algo.num_interactions`` env steps or another round would pass ``samples_max`` samples (the
local runner and distributed mode both sample through ``run_rounds``); ``algo.popsize_max`` caps
it."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from neurorun.algorithms.base import SearchAlgorithm

ROUNDS_MAX = 1000  # rounds of popsize an adaptive generation takes at most, popsize_max null
PROGRESS_S = 120.0  # an adaptive generation still sampling says how far it got this often
log = logging.getLogger(__name__)


def samples_max(algorithm: SearchAlgorithm) -> int:
    """The most samples an adaptive generation takes: popsize_max, else ROUNDS_MAX rounds."""
    return algorithm.options.adaptive.popsize_max or ROUNDS_MAX * algorithm.popsize


def run_rounds(algorithm: SearchAlgorithm,
               evaluate_round: Callable[[int], tuple[int, int]]) -> None:
    """Sample one generation in rounds: ``evaluate_round(first)`` samples ``popsize``
    solutions from sample index ``first``, evaluates them and returns ``(samples, env
    steps)``. One round; with adaptive popsize, rounds until the generation made
    ``num_interactions`` env steps or another round would pass ``samples_max`` samples
    (without popsize_max, ROUNDS_MAX rounds: said once by each algorithm built), how far it got
    said every PROGRESS_S meanwhile."""
    adaptive = algorithm.options.adaptive
    wanted, cap = adaptive.num_interactions, samples_max(algorithm)
    asked = steps = 0
    said_at = time.monotonic()
    while True:
        count, taken = evaluate_round(asked)
        asked, steps = asked + count, steps + taken
        if wanted is None or steps >= wanted:
            return
        if asked + algorithm.popsize > cap:  # whole rounds, never past popsize_max
            if adaptive.popsize_max is None and not algorithm.said_capped:
                algorithm.said_capped = True
                log.warning("generation %d ends after %d rounds of popsize %d (%s samples) "
                            "with %s of algo.num_interactions=%s interactions, as every "
                            "generation will: without algo.popsize_max a generation takes "
                            "at most %d rounds. Fix: a smaller algo.num_interactions, or "
                            "algo.popsize_max=<the most samples a generation may take>",
                            algorithm.generation + 1, asked // algorithm.popsize,
                            algorithm.popsize, f"{asked:,}", f"{steps:,}", wanted,
                            ROUNDS_MAX)
            return
        if time.monotonic() - said_at >= PROGRESS_S:
            said_at = time.monotonic()
            log.info("generation %d, adaptive popsize: %s samples so far, %s of "
                     "algo.num_interactions=%s interactions (at most %s samples)",
                     algorithm.generation + 1, f"{asked:,}", f"{steps:,}", wanted, f"{cap:,}")
