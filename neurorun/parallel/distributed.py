"""Distributed mode: actors sample their share of the population and return gradients only.

Per generation the main process sends the distribution's parameters (``algo.distribution``'s
state: for the separable Gaussians 2·D numbers) instead of a popsize×D matrix, and gets back
one gradient dict per share. The average, weighted by share size (equal weights when
``algo.num_interactions`` is set: the number of samples then depends on episode lengths),
goes to ``algo.apply_gradients``. Each actor keeps a copy of the algorithm (without its
optimizer: the center step happens in the main process), sent once.

Seeds: one draw from ``algo.generator`` per generation (so a checkpointed algorithm resumes
the same sampling) gives share ``s`` the sampling seed ``mix_seed(draw, s)``; its envs are
seeded from the evaluator's base seed plus the share's offset in the population, as in
``RayEvaluator.evaluate``. A share re-run after an actor died gives the same result.
"""

from __future__ import annotations

import copy
import math
import time
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from neurorun.algorithms.base import SearchAlgorithm
from neurorun.algorithms.distributions import SymmetricSeparableGaussian
from neurorun.parallel.workload import average_gradients, mix_seed, payload_bytes, split_workload

if TYPE_CHECKING:
    from neurorun.parallel.evaluator import RayEvaluator


def require_distributable(algo: Any) -> None:
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


def share_sizes(algo: Any, popsize: int, num_actors: int) -> list[int]:
    """Per-actor sample counts adding up to ``popsize`` (whole mirrored pairs for PGPE)."""
    unit = 2 if isinstance(algo.distribution, SymmetricSeparableGaussian) else 1
    if popsize % unit:
        raise ValueError(f"popsize={popsize} with symmetric sampling; expected an even number")
    return [n * unit for n in split_workload(popsize // unit, num_actors) if n > 0]


def make_replica(algo: Any) -> Any:
    """What an actor needs to sample and compute gradients: the algorithm minus optimizer."""
    replica = copy.copy(algo)
    replica.optimizer = None
    replica._pending = []
    return replica


def plan_shares(algo: Any, popsize: int, num_actors: int, env_base: int) -> list[dict[str, Any]]:
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


def distributed_step(evaluator: RayEvaluator, algo: Any, popsize: int | None = None,
                     seed: int | None = None) -> Tensor:
    """Sample, evaluate and update one generation on the actors; returns all fitness values.

    ``seed``: the envs' base seed (None: the evaluator's next draw, as in ``evaluate``).
    Updates ``algo`` (``apply_gradients``, ``generation += 1``), the evaluator's counters, obs
    stats and ``last_stats``.
    """
    import ray

    require_distributable(algo)
    started = time.perf_counter()
    popsize = int(algo.popsize if popsize is None else popsize)
    if evaluator._replica_of != id(algo):
        evaluator._replica_ref = ray.put(make_replica(algo))
        evaluator._replica_of, evaluator._replica_slots = id(algo), set()
    distribution = {k: v.detach().cpu() for k, v in algo.distribution.state_dict().items()}
    dist_ref = ray.put(distribution)
    obs_state = evaluator._obs_state()
    obs_ref = None if obs_state is None else ray.put(obs_state)
    shares = plan_shares(algo, popsize, evaluator.num_actors,
                         evaluator.draw_seed() if seed is None else int(seed))
    replicas_sent = [0]

    def job(share: dict[str, Any]):
        def for_slot(slot: int) -> tuple[str, tuple[Any, ...]]:
            replica = None
            if slot not in evaluator._replica_slots:
                evaluator._replica_slots.add(slot)
                replicas_sent[0] += 1
                replica = evaluator._replica_ref
            return "sample_and_evaluate", (replica, dist_ref, share, obs_ref)
        return for_slot

    results = evaluator._run([job(share) for share in shares], obs_state)
    weights = ([1.0] * len(results) if algo.num_interactions is not None
               else [len(r["fitness"]) for r in results])
    gradients = average_gradients([r["gradients"] for r in results], weights)
    algo.apply_gradients({k: v.to(algo.device, algo.dtype) for k, v in gradients.items()})
    algo.generation += 1
    evaluator.last_transfer["bytes_sent"] += payload_bytes(distribution) * len(shares)
    if replicas_sent[0]:
        replica_bytes = payload_bytes(vars(algo.distribution)) * replicas_sent[0]
        evaluator.last_transfer["bytes_sent"] += replica_bytes
    evaluator._record(results, started)
    return torch.cat([torch.tensor(r["fitness"]) for r in results]).to(algo.dtype)
