"""From the ``parallel`` config group to an evaluator (what the runner calls)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from neurorun.parallel.ray_evaluator import RayEvaluator
    from neurorun.problems import Problem

RAY_KEYS = ("num_actors", "num_gpus_per_actor", "actor_config", "num_subbatches",
            "subbatch_size", "address", "num_cpus", "include_dashboard", "max_actor_restarts")


def make_ray_evaluator(parallel: Any, problem_kwargs: Mapping[str, Any],
                       problem: Problem | None = None) -> RayEvaluator:
    """A RayEvaluator from the ``parallel`` section of a run's config (checked there:
    `neurorun.config.schema.ParallelConfig`).

    Args:
        parallel: the run's ``parallel`` section (an attribute per name of RAY_KEYS).
        problem_kwargs: the keywords the runner passed to ``make_problem``.
        problem: the runner's Problem; it then holds the global obs stats and counters.
    """
    from neurorun.parallel.ray_evaluator import RayEvaluator

    options = {key: getattr(parallel, key) for key in RAY_KEYS}
    options["num_actors"] = parallel.ray_actors
    options["actor_config"] = dict(options["actor_config"])
    return RayEvaluator(problem_kwargs, problem=problem, **options)
