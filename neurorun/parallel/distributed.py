"""Distributed mode: actors sample their share of the population and return gradients only.

Per generation the main process sends the distribution's parameters (``algo.distribution``'s
state: for the separable Gaussians 2·D numbers) instead of a popsize×D matrix, and gets back
one gradient dict per share. The average, weighted by share size (equal weights when
``algo.num_interactions`` is set: the number of samples then depends on episode lengths),
goes to ``algo.step_with_gradients``. Each actor keeps ``algo.replica()`` (the algorithm
without its optimizer: the center step happens in the main process), sent once. This module
plans the shares; ``RayEvaluator.distributed_step`` runs them.

Seeds: one draw from ``algo.generator`` per generation (so a checkpointed algorithm resumes
the same sampling) gives share ``s`` the sampling seed ``mix_seed(draw, s)``; its envs are
seeded from the evaluator's base seed plus the share's offset in the population, as in
``RayEvaluator.evaluate``. A share re-run after an actor died gives the same result.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from neurorun.algorithms.base import SearchAlgorithm
from neurorun.algorithms.distributions import SymmetricSeparableGaussian
from neurorun.parallel.workload import mix_seed, split_workload


def require_distributable(algo: SearchAlgorithm) -> None:
    """Raise ValueError when ``algo`` cannot run in distributed mode (CMA-ES)."""
    gradient_based = (type(algo).compute_gradients is not SearchAlgorithm.compute_gradients
                      and hasattr(algo, "distribution"))
    if not gradient_based:
        raise ValueError(
            f"algo.distributed=true with algo {getattr(algo, 'name', type(algo).__name__)!r}: "
            "distributed mode averages per-actor search gradients, and this algorithm's update "
            f"is not such an average: {algo._no_gradients_reason()} Fix: "
            "algo.distributed=false (actors then only evaluate), or a gradient-based "
            "algorithm: pgpe, openai_es, snes, xnes or cem.")


def share_sizes(algo: SearchAlgorithm, popsize: int, num_actors: int) -> list[int]:
    """Per-actor sample counts adding up to ``popsize`` (whole mirrored pairs for PGPE)."""
    unit = 2 if isinstance(algo.distribution, SymmetricSeparableGaussian) else 1
    if popsize % unit:
        raise ValueError(f"popsize={popsize} with symmetric sampling; expected an even number")
    return [n * unit for n in split_workload(popsize // unit, num_actors) if n > 0]


def plan_shares(algo: SearchAlgorithm, popsize: int, num_actors: int,
                env_base: int) -> list[dict[str, Any]]:
    """The shares of one generation (sizes, seeds, adaptive limits); draws from algo.generator."""
    draw = int(torch.randint(2**62, (1,), generator=algo.generator))
    sizes = share_sizes(algo, popsize, num_actors)
    shares, offset = [], 0
    for index, size in enumerate(sizes):
        share: dict[str, Any] = {"size": size, "sample_seed": mix_seed(draw, index),
                                 "env_seed": env_base + offset, "round_stride": popsize,
                                 "noise_seed": mix_seed(env_base, offset)}
        if algo.num_interactions is not None:
            share["target_interactions"] = math.ceil(algo.num_interactions * size / popsize)
            if algo.popsize_max is not None:
                share["max_size"] = max(size, algo.popsize_max * size // popsize)
        shares.append(share)
        offset += size
    return shares
