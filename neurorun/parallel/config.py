"""From the ``parallel`` config group to an evaluator (what the runner calls)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

# ray_evaluator (ray) is imported when a ray run builds its evaluator: a local run never loads ray
if TYPE_CHECKING:
    from neurorun.parallel.ray_evaluator import RayEvaluator
    from neurorun.problems import Problem


def make_ray_evaluator(parallel: Any, problem_kwargs: Mapping[str, Any],
                       problem: Problem | None = None) -> RayEvaluator:
    """A RayEvaluator from the ``parallel`` section of a run's config (checked there:
    `neurorun.config.schema.ParallelConfig`).

    Args:
        parallel: the run's ``parallel`` section: each key but ``name`` is RayEvaluator's.
        problem_kwargs: the keywords the runner passed to ``make_problem``.
        problem: the runner's Problem; it then holds the global obs stats and counters.
    """
    from neurorun.parallel.ray_evaluator import RayEvaluator

    options = dataclasses.asdict(parallel)  # actor_config copied
    del options["name"]
    options["num_actors"] = parallel.ray_actors
    return RayEvaluator(problem_kwargs, problem=problem, **options)
