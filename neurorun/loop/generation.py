"""A generation's search step: sample, evaluate and update, here or on ray's actors."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import torch

from neurorun.algorithms.adaptive import run_rounds
from neurorun.problems.evaluator import EvaluationStats

if TYPE_CHECKING:
    from neurorun.algorithms import SearchAlgorithm
    from neurorun.parallel import RayEvaluator
    from neurorun.problems import Evaluator


def search_step(algorithm: SearchAlgorithm, evaluator: Evaluator,
                distributed: bool) -> tuple[torch.Tensor, EvaluationStats]:
    """Ask, evaluate and tell; the fitness of the generation's samples (all of them, in
    order) and its evaluations' stats, merged. Here: in rounds while the adaptive popsize asks
    for more; distributed (parallel=ray): the actors sample their shares and update there too."""
    if distributed:  # checked with the config to be ray's evaluator
        ray_evaluator = cast("RayEvaluator", evaluator)
        samples_fitness = ray_evaluator.distributed_step(algorithm)
        return samples_fitness, EvaluationStats.merge([ray_evaluator.last_stats])
    fitness, stats = [], []

    def evaluate_round(first: int) -> tuple[int, int]:
        count_before = evaluator.interaction_count
        fitness.append(evaluator.evaluate(algorithm.ask()))
        stats.append(evaluator.last_stats)
        return len(fitness[-1]), evaluator.interaction_count - count_before

    run_rounds(algorithm, evaluate_round)
    samples_fitness = torch.cat(fitness)
    algorithm.tell(samples_fitness)
    return samples_fitness, EvaluationStats.merge(stats)
