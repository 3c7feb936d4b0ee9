"""The restart schedule's record in state.pt ("restart"): its regimes, the range of a small
attempt's step factor and an attempt's fields, declared here so that both the schedule
(loop/restarts.py) and the record's checks (record/state.py) read them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

REGIMES = ("small", "large")
SMALL_STEP_RANGE = 0.01  # a small attempt's step size factor: SMALL_STEP_RANGE ** v


@dataclass
class AttemptRecord:
    """One start of the search and what it has used so far."""

    popsize: int
    step_factor: float = 1.0  # times the configured initial step size
    regime: str = "large"  # whose budget its evaluations count in (bipop)
    max_generations: int | None = None  # a small bipop attempt's cap
    generations: int = 0
    evaluations: int = 0  # solutions evaluated


class RestartRecord(TypedDict):
    """The restart schedule's record (`RestartSchedule.state_dict`): state.pt's ``restart``."""

    small_restarts: int  # bipop's small attempts so far (of the run's ``restarts``)
    evaluations: dict[str, int]  # the solutions each regime of REGIMES has evaluated
    attempt: dict[str, Any]  # the current attempt, an AttemptRecord's fields
