"""When a run stops, in one place, for a given objective sense (neurorun.common.sense); what one
generation reports (the metric columns) is record/metrics.py's, the best center so far
record/best.py's."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from neurorun.common.sense import TARGET_SIGNS, reached
from neurorun.record.metrics import GenerationStatus


@dataclass(frozen=True)
class StopLimits:
    """The run's stop rules (None: not set): ``reason`` says which one ends the run, and
    ``progress`` how far the closest one is (the console's progress bar)."""

    generations: int | None = None
    max_interactions: int | None = None
    max_time: float | None = None
    target_score: float | None = None
    sense: str = "max"  # target_score is reached at center_eval >= it ("min": <= it)

    def reason(self, status: GenerationStatus | None) -> str | None:
        """Why the run stops after ``status`` (None: go on; no status yet: go on)."""
        if status is None:
            return None
        center, target = status.center_eval, self.target_score
        if reached(self.sense, center, target):
            return (f"target_score reached: center_eval {center:.2f} {TARGET_SIGNS[self.sense]} "
                    f"{target}")
        if self.generations is not None and status.generation >= self.generations:
            return f"generations: {status.generation} of {self.generations} done"
        count = status.total_interaction_count
        if self.max_interactions is not None and count >= self.max_interactions:
            return f"max_interactions: {count:,} >= {self.max_interactions:,}"
        if self.max_time is not None and status.elapsed_s >= self.max_time:
            decimals = max(1, 1 - math.floor(math.log10(self.max_time)))  # 0.001: 4
            return f"max_time: {status.elapsed_s:.{decimals}f} s >= {self.max_time} s"
        return None

    def progress(self, status: dict[str, Any]) -> tuple[str, float]:
        """(name, fraction done) of the condition closest to stopping the run."""
        candidates = [("generations", status.get("generation"), self.generations),
                      ("max_interactions", status.get("total_interaction_count"),
                       self.max_interactions),
                      ("max_time", status.get("elapsed_s"), self.max_time)]
        fractions = [(name, min(1.0, float(value or 0) / limit))
                     for name, value, limit in candidates if limit]
        return max(fractions, key=lambda item: item[1], default=("generations", 0.0))
