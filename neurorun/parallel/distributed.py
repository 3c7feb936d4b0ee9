"""Distributed mode: actors regenerate their shares from seeds, the main process ranks the whole
generation, actors return weighted noise sums (``RayEvaluator.distributed_step`` runs it).

One generation, for every algorithm but full CMA-ES (see ``neurorun.algorithms.base``):

1. The main process draws the generation's noise draw and sends, once, the algorithm's
   sampling state (for the separable searches: the center and the stdev, 2 D numbers) and,
   per share, its first sample index and size (a share per actor and round, or as
   ``parallel.num_subbatches`` / ``subbatch_size`` cut it; actors take shares from a queue).
2. Each actor makes its share's noise rows from (draw, index), evaluates the samples and
   returns their fitness (and, for CMA-ES's negative weights, the squared noise norms), its
   counters and its observation-statistics delta. It keeps the noise.
3. The main process computes the weights of the whole generation with the algorithm's own
   rule and sends each actor the weights of its shares.
4. Each actor returns the weighted sums of its noise (one or two D-vectors; XNES: a D x D
   matrix); the main process adds them and updates: the local run's update, to the order of
   float summation, whatever the number of actors.

Bytes per generation: the sampling state once, a few numbers per solution (index, fitness,
weights), and the sums, a few D-vectors per actor. Main-process work: the ranking (P log P)
and adding the actors' sums (actors x D).

Rounds: with adaptive popsize (``algo.num_interactions``) the main process asks for
``popsize`` more samples, round after round, until the generation made that many
interactions or another round would pass ``popsize_max`` (``algorithms.adaptive.run_rounds``,
the local runner's loop too). Each round draws the evaluator's base seed and seeds share
``[first, stop)`` of it with ``base + first``, as ``RayEvaluator.evaluate`` does, so with envs
that seed every episode a distributed run gives the local run's fitness, sample for sample.
A share whose actor died is evaluated again by a replacement from the same numbers: the same
rows, the same result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from neurorun.algorithms.base import SearchAlgorithm
from neurorun.parallel.workload import subbatch_bounds


@dataclass(frozen=True)
class Share:
    """Samples ``first .. first + size - 1`` of the generation."""

    first: int
    size: int

    @property
    def stop(self) -> int:
        return self.first + self.size


def require_distributable(algo: SearchAlgorithm | type[SearchAlgorithm]) -> None:
    """Raise ValueError when ``algo`` cannot run in distributed mode (full CMA-ES)."""
    if not algo.distributable:
        raise ValueError(
            f"algo.distributed=true with algo {algo.name!r}: its full D x D covariance would "
            "travel to and from every actor each generation. Fix: algo=sep_cmaes (diagonal "
            "covariance, distributes), or algo.distributed=false (actors then only evaluate).")


def plan_round(algo: SearchAlgorithm, first: int, *, num_actors: int,
               num_subbatches: int | None = None,
               subbatch_size: int | None = None) -> list[Share]:
    """One round of ``algo.popsize`` samples from index ``first``, cut as the evaluator cuts
    populations (a share per actor, or ``num_subbatches`` / ``subbatch_size``), in whole
    mirrored pairs."""
    unit = 2 if algo.mirrored else 1
    if algo.popsize % unit:
        raise ValueError(f"popsize={algo.popsize} with mirrored sampling; expected an even "
                         "number")
    size = None if subbatch_size is None else max(1, -(-int(subbatch_size) // unit))
    bounds = subbatch_bounds(algo.popsize // unit, num_actors=num_actors,
                             num_subbatches=num_subbatches, subbatch_size=size)
    return [Share(first + start * unit, (stop - start) * unit) for start, stop in bounds]


def weight_slices(weights: Mapping[str, torch.Tensor], kinds: Mapping[str, Sequence[str]],
                  shares: Sequence[Share]) -> list[dict[str, Any]]:
    """The weights each share's sums need (the vectors named in ``kinds``), as numpy rows."""
    return [{name: weights[name][share.first:share.stop].detach().cpu().numpy()
             for name in kinds} for share in shares]


def add_sums(parts: Sequence[Mapping[str, Any]]) -> dict[str, torch.Tensor]:
    """The sums of every actor, added (float64, then the algorithm's dtype at its update)."""
    total: dict[str, torch.Tensor] = {}
    for part in parts:
        for key, value in part.items():
            value = torch.as_tensor(value, dtype=torch.float64)
            total[key] = value if key not in total else total[key] + value
    return total
