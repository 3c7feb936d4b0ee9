"""From the ``parallel`` config group to an evaluator (what the runner calls)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from neurorun.parallel.ray_evaluator import RayEvaluator
    from neurorun.problems import Problem

RAY_KEYS = ("num_actors", "num_gpus_per_actor", "actor_config", "num_subbatches",
            "subbatch_size", "address", "num_cpus", "include_dashboard", "max_actor_restarts")


def make_ray_evaluator(parallel: Mapping[str, Any], problem_kwargs: Mapping[str, Any],
                       problem: Problem | None = None) -> RayEvaluator:
    """A RayEvaluator from the ``parallel`` config (a plain dict: ``name: ray`` and RAY_KEYS).

    Args:
        parallel: the resolved ``cfg.parallel``.
        problem_kwargs: the keywords the runner passed to ``make_problem``.
        problem: the runner's Problem; it then holds the global obs stats and counters.
    """
    from neurorun.parallel.ray_evaluator import RayEvaluator

    unknown = sorted(set(parallel) - {"name", *RAY_KEYS})
    if unknown:
        raise ValueError(f"parallel has unknown keys {unknown}; expected some of "
                         f"{list(RAY_KEYS)}. Fix: remove them or check the spelling.")
    options = {key: parallel[key] for key in RAY_KEYS if key in parallel}
    if options.get("num_actors") is None:
        options["num_actors"] = "max"
    if options.get("max_actor_restarts") is None:
        options.pop("max_actor_restarts", None)
    return RayEvaluator(problem_kwargs, problem=problem, **options)
