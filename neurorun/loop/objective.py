"""The number a run hands back to a Hydra sweeper (the `objective` key), higher is better.

    best_center_eval            the best center evaluation of the run (the default)
    last_center_eval            the last center evaluation
    mean_center_eval_last_<K>   the mean of the last K center evaluations (e.g. _last_5)
    neg_interactions_to_target  minus the env steps taken in training until center_eval first
                                reached target_score; a run that never reached it scores
                                minus twice the larger of max_interactions and the steps it
                                took, below every run that reached it within that budget

It is read from the run's `metrics.jsonl`, so a resumed run counts all its generations; a
run without center evaluations (eval_every=0) has none (nan). A sweeper must maximize it
(Optuna: `hydra.sweeper.direction=maximize`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from neurorun.common.sense import best, reached
from neurorun.config.schema import MEAN_LAST
from neurorun.record.layout import JSONL_NAME


def objective_value(name: str, run_dir: str | Path, target_score: float | None,
                    sense: str = "max", budget: int | None = None) -> float:
    """The objective of the run in `run_dir`, from its metrics (nan: no center evaluation);
    `sense`: the algorithm's objective sense (best and target reached follow it); `budget`:
    its max_interactions (a miss scores the same whatever stopped it, time or the budget)."""
    rows = [json.loads(line) for line in
            (Path(run_dir) / JSONL_NAME).read_text().splitlines() if line.strip()]
    centers = [row["center_eval"] for row in rows
               if row.get("center_eval") is not None and math.isfinite(row["center_eval"])]
    if name == "neg_interactions_to_target":
        for row in rows:
            if reached(sense, row.get("center_eval"), target_score):
                return -float(row["total_interaction_count"])
        if not rows:
            return math.nan
        return -2.0 * float(max(budget or 0, rows[-1]["total_interaction_count"]))
    if not centers:
        return math.nan
    if name == "best_center_eval":
        return float(best(sense, centers))
    if name == "last_center_eval":
        return float(centers[-1])
    last = centers[-int(MEAN_LAST.fullmatch(name).group(1)):]
    return float(sum(last) / len(last))
