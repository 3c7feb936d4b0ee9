"""What some config keys may hold, declared once, below the parts that use the values: the
config checks read them before a run starts, the run loop (objective, restarts) when it runs."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# objective=: the number a run hands back to a Hydra sweeper (loop/objective.py says each)
OBJECTIVES = ("best_center_eval", "last_center_eval", "mean_center_eval_last_<K>",
              "neg_interactions_to_target")
MEAN_LAST = re.compile(r"mean_center_eval_last_([1-9][0-9]*)")

RESTART_STRATEGIES = ("same", "ipop", "bipop")
# restart.* where a config has no value: a run saved before restarts existed never restarts
# (conf/config.yaml writes the same values, with what each means)
RESTART_DEFAULTS: dict[str, Any] = {"patience": None, "min_improvement": 0.05,
                                    "strategy": "same", "popsize_factor": 2.0}


def objective_error(name: Any, target_score: float | None) -> str | None:
    """What is wrong with `objective=<name>` in this config (None: nothing)."""
    if name not in OBJECTIVES[:2] + OBJECTIVES[3:] and not (
            isinstance(name, str) and MEAN_LAST.fullmatch(name)):
        return (f"objective={name!r}: expected one of {', '.join(OBJECTIVES)}. "
                "Fix: objective=best_center_eval.")
    if name == "neg_interactions_to_target" and target_score is None:
        return ("objective=neg_interactions_to_target needs a target, but target_score=null. "
                "Fix: target_score=<score>.")
    return None


def check_strategy(strategy: Any) -> str:
    """``restart.strategy``: one of RESTART_STRATEGIES (the config checks ask this too)."""
    if strategy not in RESTART_STRATEGIES:
        raise ValueError(f"strategy={strategy!r}: expected one of "
                         f"{', '.join(RESTART_STRATEGIES)}. Fix: restart.strategy=ipop.")
    return strategy


def restart_settings(section: Mapping[str, Any] | None) -> dict[str, Any]:
    """A config's ``restart`` section (None: it has none) with RESTART_DEFAULTS filled in."""
    return {**RESTART_DEFAULTS, **(section or {})}
