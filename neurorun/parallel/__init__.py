"""Parallel evaluation on ray: ``RayEvaluator`` (the Problem interface over actors) and
distributed mode. Importing this package does not import ray; building an evaluator does.

    from neurorun.parallel import RayEvaluator
    with RayEvaluator({"env": "CartPole-v1", "seed": 0}, num_actors=2, num_cpus=2) as evaluator:
        fitness = evaluator.evaluate(params)          # (P,) as problem.evaluate(params)
        fitness = evaluator.distributed_step(algo)    # or: actors sample, main averages gradients
"""

from __future__ import annotations

from typing import Any

__all__ = ["ActorRestartLimitError", "RayEvaluator", "RemoteEvaluationError",
           "require_distributable", "make_ray_evaluator"]

_LAZY = {
    "RayEvaluator": "neurorun.parallel.ray_evaluator",
    "ActorRestartLimitError": "neurorun.parallel.pool",
    "RemoteEvaluationError": "neurorun.parallel.pool",
    "require_distributable": "neurorun.parallel.distributed",
    "make_ray_evaluator": "neurorun.parallel.config",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'neurorun.parallel' has no attribute {name!r}")
