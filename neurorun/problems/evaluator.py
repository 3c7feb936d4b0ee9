"""``Evaluator``: what the runner asks of whatever evaluates its populations.

``Problem`` (in this process) and ``neurorun.parallel.RayEvaluator`` (on ray actors) both
satisfy it; ``neurorun.build.make_evaluator`` returns one or the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from torch import Tensor


@runtime_checkable
class Evaluator(Protocol):
    """Fitness of populations, with the counters and state a checkpoint keeps.

    Attributes:
        solution_length: parameters per solution (the ``D`` of ``evaluate``'s input).
        interaction_count: env steps taken by every ``evaluate`` call so far.
        episode_count: episodes finished by every ``evaluate`` call so far.
        last_stats: figures of the last ``evaluate`` call (episodes, timings, non-finite
            events), merged into the generation's status.
    """

    solution_length: int
    interaction_count: int
    episode_count: int
    last_stats: dict[str, Any]

    def evaluate(self, params: Tensor, seed: int | None = None) -> Tensor:
        """Fitness ``(P,)`` of the parameter vectors ``params (P, D)``; ``seed`` is the call's
        base seed (None: the next draw of the evaluator's generator)."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """What resumes the evaluation: counters, observation statistics, seed generator."""
        ...

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore what ``state_dict`` returned."""
        ...

    def close(self) -> None:
        """Release the envs (or actors); calling it again does nothing."""
        ...
