"""From the returns of (solution, episode) pairs to fitness, for both rollout loops (the host
loop of ``rollout.py`` and the compiled one of ``jax/rollout.py``): reward shaping (the shift
and the alive bonus), the mean over a solution's episodes, the solutions that met a non-finite
value, and what a rollout hands back (``RolloutResult``).

``replace_nonfinite`` gives a solution that met a non-finite observation or reward (or, on a
Discrete env, gave a NaN choice score) the worst fitness of its ``evaluate`` call (all of the
call's rollouts).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from neurorun.problems.options import AliveBonus, RolloutOptions
from neurorun.problems.running_norm import RunningNorm

NONFINITE_FITNESS = -1e9  # fitness when no solution of an evaluate call is finite


@dataclass
class RolloutResult:
    """Per solution (the first n rows): fitness and a non-finite flag; plus episode data."""

    fitness: Tensor  # (n,) float64, mean shaped return over num_episodes
    nonfinite: Tensor  # (n,) bool: a non-finite observation or reward (or NaN score) was met
    episode_returns: Tensor  # (k,) float64, unshaped returns of finished episodes (finite ones)
    episode_lengths: Tensor  # (k,) int64
    lengths: Tensor  # (n * num_episodes,) int64 counted steps of every (solution, episode) pair
    interactions: int
    episodes: int
    vector_steps: int  # env.step calls
    simulated_steps: int  # env steps the simulators took (counted ones, resets, idle envs)
    collected: RunningNorm | None  # statistics of the observations seen


def _alive_bonus_totals(schedule: AliveBonus, lengths: Tensor) -> Tensor:
    """Sum of the alive bonus over an episode of each length (steps t = 1..length)."""
    longest = int(lengths.max()) if lengths.numel() else 0
    t = torch.arange(1, longest + 1, dtype=torch.float64, device=lengths.device)
    gap = max(schedule.t1 - schedule.t0, 1)
    ramp = torch.where(t >= schedule.t0, schedule.bonus * (t - schedule.t0) / gap, 0.0)
    per_step = torch.where(t >= schedule.t1, schedule.bonus, ramp)
    totals = torch.cat([per_step.new_zeros(1), per_step.cumsum(0)])
    return totals[lengths]


def pair_results(returns: Tensor, lengths: Tensor, finished: np.ndarray, failed: np.ndarray,
                 num_solutions: int, options: RolloutOptions) -> tuple[Tensor, Tensor, Tensor]:
    """Fitness, non-finite flags and kept episodes from per-pair data (both rollout paths).

    Args:
        returns: (n * num_episodes,) float64 unshaped return of each (solution, episode) pair,
            pairs numbered episode-major (see Schedule).
        lengths: (n * num_episodes,) int64 counted steps of each pair.
        finished: which pairs' episodes ended; failed: (n,) solutions that met a non-finite
            observation.

    Returns:
        ``fitness (n,)`` (mean shaped return over episodes), ``nonfinite (n,)`` and ``kept``
        (pairs whose returns and lengths the episode statistics report).
    """
    device = returns.device
    shaped = returns
    if options.shapes_rewards:
        shaped = returns - options.decrease_rewards_by * lengths.to(torch.float64)
        if options.alive_bonus is not None:
            shaped = shaped + _alive_bonus_totals(options.alive_bonus, lengths)
    num_eps = options.num_episodes
    fitness = shaped.view(num_eps, num_solutions).sum(0) / num_eps
    done = torch.from_numpy(finished).to(device)
    complete = done.view(num_eps, num_solutions).all(0)
    nonfinite = torch.from_numpy(failed).to(device) | ~complete | ~torch.isfinite(fitness)
    return fitness, nonfinite, done & ~nonfinite.repeat(num_eps)



def replace_nonfinite(fitness: Tensor, nonfinite: Tensor) -> Tensor:
    """Fitness with each solution that met a non-finite observation or reward the worst of the
    call: ``min(finite) - max(1, max(finite) - min(finite))``, or ``NONFINITE_FITNESS`` when no
    solution is finite."""
    if not bool(nonfinite.any()):
        return fitness
    good = fitness[~nonfinite]
    if good.numel() == 0:
        return torch.full_like(fitness, NONFINITE_FITNESS)
    lowest, spread = good.min(), good.max() - good.min()
    worst = lowest - torch.clamp(spread, min=1.0)
    return torch.where(nonfinite, worst, fitness)
