"""The best center of a run so far, as the run keeps it and its resume state saves it
(state.pt's "best"); `best.*` policies are written from it (record/checkpoint.py)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from neurorun.common.sense import improves
from neurorun.problems.running_norm import NormRecord


@dataclass
class BestCenter:
    """The best center so far: its parameters (None: no finite center evaluation yet), its
    center_eval, its generation and the observation statistics it was evaluated with (a
    RunningNorm's state dict; None without normalization). ``state_dict`` is its record in the
    resume state (``state.pt``'s "best")."""

    solution: Any = None  # (D,) tensor on the CPU
    score: float | None = None
    generation: int = 0
    obs_stats: NormRecord | None = None

    def offer(self, sense: str, score: float | None, generation: int, center: Any,
              obs_stats: Any) -> None:
        """Keep ``center`` (evaluated at ``score`` with ``obs_stats``, a RunningNorm or None)
        when ``score`` improves on the best (``improves``)."""
        if improves(sense, score, self.score):
            self.solution = center.detach().cpu().clone()
            self.score, self.generation = score, generation
            self.obs_stats = None if obs_stats is None else obs_stats.state_dict()

    def state_dict(self) -> dict[str, Any]:
        return {field.name: getattr(self, field.name) for field in fields(self)}  # no copies

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> BestCenter:
        return cls(state["solution"], state["score"], int(state["generation"]),
                   state["obs_stats"])
