"""Restarts of a stalled search: when one is due (`StallWatch`) and the population of the next
attempt (`RestartSchedule`, ``restart.strategy``).

Strategies, as pycma's ``fmin`` runs them (``incpopsize`` is ``restart.popsize_factor``, ``p0``
the configured ``algo.popsize``, ``k`` the restart's number, 1, 2, ...):

- ``same``: every attempt samples ``p0`` solutions a generation.
- ``ipop`` (Auger and Hansen 2005): attempt ``k`` samples ``floor(p0 * factor^k)``.
- ``bipop`` (Hansen 2009): two regimes share the budget. The first attempt counts as the
  small regime. Each restart is small while the small regime has used fewer evaluations
  (solutions evaluated) than the large one, else large. The ``j``-th large attempt samples
  ``floor(p0 * factor^j)``; a small attempt, with ``j`` large attempts so far, samples
  ``floor(p0 * (factor^j)^(u^2))``, starts from its step size times ``0.01^v`` (``u, v`` uniform
  in [0, 1), seeded by the run's seed and ``k``) and restarts after at most half the large
  regime's evaluations (in generations of its popsize) even when it does not stall.

Mirrored algorithms (whole pairs) round an odd popsize up by one.
"""

from __future__ import annotations

import logging
import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from neurorun.common.errors import ConfigError
from neurorun.common.seeding import derive_seed
from neurorun.common.sense import improves, maximized
from neurorun.common.settings import check_value
from neurorun.config.schema import RESTART_STRATEGIES, RestartConfig
from neurorun.loop.build import build_algorithm, check_generation_fits
from neurorun.record.restart import REGIMES, SMALL_STEP_RANGE, AttemptRecord, RestartRecord

if TYPE_CHECKING:
    from neurorun.algorithms import SearchAlgorithm
    from neurorun.config.schema import RunConfig
    from neurorun.problems import Problem


@dataclass
class StallWatch:
    """When a search attempt stalls (``restart.*``): its best center_eval rose by no more than
    ``min_improvement`` x its size over the last ``patience`` center evaluations."""

    patience: int | None  # None: never stalls
    min_improvement: float = RestartConfig.min_improvement
    sense: str = "max"
    # the attempt's best center_eval after each of its center evaluations (None: none finite)
    history: list[float | None] = field(default_factory=list)

    def stalled(self, center_eval: float | None) -> bool:
        """Record one center evaluation (None: not evaluated: nothing changes)."""
        if self.patience is None or center_eval is None:
            return False
        best = self.history[-1] if self.history else None
        self.history.append(center_eval if improves(self.sense, center_eval, best) else best)
        if len(self.history) <= self.patience or self.history[-1 - self.patience] is None:
            return False
        then, now = self.history[-1 - self.patience], self.history[-1]
        gain = maximized(self.sense, now - then)
        return gain <= self.min_improvement * abs(then)

    def reset(self) -> None:
        self.history = []


class Attempt(AttemptRecord):
    """One start of the search and what it has used so far (its fields: AttemptRecord)."""

    def options(self, options: dict[str, Any], step_sizes: tuple[str, ...],
                popsize_options: tuple[str, ...] = ()) -> dict[str, Any]:
        """The algorithm's options (``algo.*``) for this attempt: its step size (whichever of
        ``step_sizes``, the algorithm's ``STEP_SIZES``, is set) times step_factor; an adaptive
        popsize's cap of at least one round; none of ``popsize_options`` (the algorithm's
        ``POPSIZE_OPTIONS``: the attempt sets the popsize)."""
        options = {key: value for key, value in options.items() if key not in popsize_options}
        if options.get("popsize_max") is not None:
            options["popsize_max"] = max(options["popsize_max"], self.popsize)
        for key in step_sizes:
            value = options.get(key)
            if value is not None:
                options[key] = ([v * self.step_factor for v in value] if isinstance(value, list)
                                else value * self.step_factor)
        return options


@dataclass
class RestartSchedule:
    """The popsize and step size of each attempt of one run (module docstring)."""

    strategy: str
    popsize: int  # p0
    factor: float = RestartConfig.popsize_factor
    mirrored: bool = False
    seed: int = 0
    restarts: int = 0
    small_restarts: int = 0  # restarts into bipop's small regime
    evaluations: dict[str, int] = field(default_factory=lambda: dict.fromkeys(REGIMES, 0))
    attempt: Attempt | None = None
    stall: StallWatch = field(default_factory=lambda: StallWatch(None))

    @classmethod
    def of_run(cls, config: RunConfig, algorithm: SearchAlgorithm) -> RestartSchedule:
        """The schedule ``restart.*`` sets for a run whose first attempt is ``algorithm``."""
        settings = config.restart
        return cls(settings.strategy, algorithm.popsize, settings.popsize_factor,
                   mirrored=algorithm.mirrored, seed=config.seed,
                   stall=StallWatch(settings.patience, settings.min_improvement,
                                    algorithm.objective_sense))

    def __post_init__(self) -> None:
        # a config's is checked with it, by the same rule
        check_value("strategy", self.strategy, str, {"choices": RESTART_STRATEGIES})
        if self.attempt is None:  # pycma counts bipop's first attempt in the small regime
            self.attempt = Attempt(self.popsize,
                                   regime="small" if self.strategy == "bipop" else "large")

    def restart_due(self, samples: int, center_eval: float | None) -> bool:
        """Record one generation of the running attempt (``samples`` solutions evaluated, its
        center evaluation or None); whether the next generation starts a new attempt."""
        self.attempt.generations += 1
        self.attempt.evaluations += int(samples)
        return self.stall.stalled(center_eval) or self.exhausted()

    def exhausted(self) -> bool:
        """Whether a small bipop attempt has used its share of generations."""
        cap = self.attempt.max_generations
        return cap is not None and self.attempt.generations >= cap

    def next_attempt(self) -> Attempt:
        """Close the running attempt's books and start the next one."""
        self.stall.reset()
        self.evaluations[self.attempt.regime] += self.attempt.evaluations
        self.restarts += 1
        if self.strategy == "same":
            self.attempt = Attempt(self.popsize)
        elif self.strategy == "ipop":
            self.attempt = Attempt(self._sized(self.popsize * self.factor ** self.restarts))
        elif self.evaluations["small"] < max(1, self.evaluations["large"]):
            self.small_restarts += 1
            u, v = np.random.default_rng(
                derive_seed(self.seed, "restart", self.restarts)).random(2)
            multiplier = self.factor ** (self.restarts - self.small_restarts)
            popsize = self._sized(self.popsize * multiplier ** (u * u))
            self.attempt = Attempt(popsize, float(SMALL_STEP_RANGE ** v), "small",
                                   max(1, int(0.5 * self.evaluations["large"] / popsize)))
        else:
            self.attempt = Attempt(self._sized(
                self.popsize * self.factor ** (self.restarts - self.small_restarts)))
        return self.attempt

    def _sized(self, popsize: float) -> int:
        size = max(1, math.floor(popsize))
        return size + size % 2 if self.mirrored else size

    # ----- the resume state (plain numbers; the run's state holds ``restarts`` itself) -----
    def state_dict(self) -> RestartRecord:
        return RestartRecord(small_restarts=self.small_restarts,
                             evaluations=dict(self.evaluations), attempt=asdict(self.attempt))

    def restore(self, restarts: int, record: RestartRecord | None,
                stall_history: list[float | None]) -> None:
        """Continue from a resumed state.pt's ``restarts``, ``restart`` (None: a format-1
        state, from before restarts: the schedule as built) and ``stall_history``."""
        self.restarts = restarts
        if record is not None:
            self.load_state_dict(record)
        self.stall.history = list(stall_history)

    def load_state_dict(self, state: RestartRecord) -> None:
        self.small_restarts = int(state["small_restarts"])
        self.evaluations = {regime: int(state["evaluations"][regime]) for regime in REGIMES}
        self.attempt = Attempt(**state["attempt"])


def restart(schedule: RestartSchedule, config: RunConfig, problem: Problem,
            generation: int) -> SearchAlgorithm:
    """The algorithm of the schedule's next attempt, started again after ``generation`` from
    a new start (the best so far stays best) with the popsize and step size
    ``restart.strategy`` gives it.

    Raises:
        ConfigError: the new popsize's generation would not fit the device's memory.
    """
    stall = schedule.stall
    why = (f"its {schedule.attempt.generations} generations were the small regime's share"
           if schedule.exhausted() else
           f"the best center_eval of this attempt rose by at most "
           f"{stall.min_improvement:g} of its size in {stall.patience} center evaluations")
    attempt = schedule.next_attempt()
    logging.getLogger(__name__).info(
        "restart %d after generation %d (%s): popsize %d, step size x %.3g",
        schedule.restarts, generation, why, attempt.popsize, attempt.step_factor)
    algorithm = build_algorithm(config, problem, schedule.restarts, attempt)
    try:
        check_generation_fits(config, problem, algorithm)
    except (ValueError, RuntimeError) as error:
        raise ConfigError(f"restart {schedule.restarts} (restart.strategy={schedule.strategy}) "
                          f"grew the popsize to {attempt.popsize}: {error}") from error
    return algorithm
