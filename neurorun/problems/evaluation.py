"""The rollouts behind ``Problem.evaluate`` and ``Problem.test_episodes``: a population split
over env slots, or one solution's test episodes, on the compiled program where the env and
network have one (``JaxRollout``), else on the host loop (``HostEvaluation``).

Observation statistics stay frozen during a population's evaluation and its observations are
merged in at the end, so fitness does not depend on how the population is split; a solution
that meets a non-finite observation or reward (or gives a NaN choice score on a Discrete env)
gets the call's worst fitness."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from neurorun.problems.evaluator import EvaluationStats
from neurorun.problems.host_evaluation import HostEvaluation
from neurorun.problems.memory import HOST_SLOTS, TEST_SLOTS
from neurorun.problems.options import PLAIN_ROLLOUT, RolloutOptions
from neurorun.problems.returns import RolloutResult, replace_nonfinite
from neurorun.problems.running_norm import RunningNorm

if TYPE_CHECKING:
    from neurorun.problems.jax.rollout import JaxRollout


class Evaluation:
    """Runs solutions on ``compiled`` (None: on ``host``), drawing action noise from
    ``noise``."""

    def __init__(self, host: HostEvaluation, compiled: JaxRollout | None,
                 options: RolloutOptions, noise: torch.Generator):
        self.host = host
        self.compiled = compiled
        self.options = options
        self.noise = noise

    def slots(self, total: int) -> int:
        """Env slots of an evaluation of ``total`` solutions: streaming, one queue of every
        (solution, episode) pair over at most ``max_num_envs`` slots; lock-step, sub-batches
        of at most ``max_num_envs`` solutions, one slot each."""
        env = self.host.envs.options
        limit = env.max_num_envs or (total if self.compiled is not None
                                     else min(total, HOST_SLOTS))
        if env.streaming:
            return min(limit, total * self.options.num_episodes)
        return min(limit, total)

    def population(self, params: Tensor, seed: int, cut: int | None,
                   stats: RunningNorm | None) -> tuple[Tensor, EvaluationStats]:
        """Fitness ``(P,)`` of ``params (P, D)`` (mean return over ``num_episodes`` episodes,
        cut after ``cut`` steps) and the call's figures; ``stats`` normalize the observations
        and take in the call's at its end."""
        started = time.perf_counter()
        total = params.shape[0]
        slots = self.slots(total)
        chunk = total if self.host.envs.options.streaming else slots
        results = []
        collected = None if stats is None else RunningNorm(stats.size)
        for first in range(0, total, chunk):
            part = None if stats is None else RunningNorm(stats.size)
            results.append(self._run("eval", params[first:first + chunk], first, self.options,
                                     seed + first, stats, part, min(slots, total - first), cut))
            if part is not None:
                collected.update(part)
        if stats is not None:
            stats.update(collected)
        nonfinite = torch.cat([r.nonfinite for r in results])
        fitness = replace_nonfinite(torch.cat([r.fitness for r in results]), nonfinite)
        figures = EvaluationStats.of_episodes(
            torch.cat([r.episode_returns for r in results]),
            torch.cat([r.episode_lengths for r in results]).to(torch.float64),
            num_interactions=sum(r.interactions for r in results),
            num_episodes=sum(r.episodes for r in results),
            nonfinite_count=int(nonfinite.sum()),
            num_vector_steps=sum(r.vector_steps for r in results),
            num_simulated_steps=sum(r.simulated_steps for r in results),
            eval_time_s=time.perf_counter() - started, num_subbatches=1)
        return fitness.to(params.dtype), figures

    def test(self, params: Tensor, num_episodes: int, seed: int,
             stats: RunningNorm | None) -> tuple[Tensor, Tensor]:
        """Returns and lengths ``(num_episodes,)`` of the solution ``params (1, D)``, episode k
        as solution k's first: no action noise, no shaping, ``stats`` left alone; NaN for an
        episode that met a non-finite value. Batches of at most ``TEST_SLOTS`` episodes keep
        the memory flat."""
        returns, lengths = [], []
        for first in range(0, num_episodes, TEST_SLOTS):
            count = min(TEST_SLOTS, num_episodes - first)
            result = self._run("test", params.expand(count, -1), first, PLAIN_ROLLOUT,
                               seed + first, stats, None, count)
            returns.append(torch.where(result.nonfinite, float("nan"), result.fitness))
            lengths.append(result.lengths)
        return torch.cat(returns).to(params.dtype), torch.cat(lengths)

    def _run(self, purpose: str, params: Tensor, first: int, options: RolloutOptions,
             seed: int, stats: RunningNorm | None, collect: RunningNorm | None, slots: int,
             cut: int | None = None) -> RolloutResult:
        """Solutions ``first..`` on ``slots`` env slots, episodes cut after ``cut`` steps."""
        if self.compiled is None:
            return self.host(purpose, params, first, options, seed=seed, slots=slots,
                             normalizer=stats, collect=collect, noise=self.noise, cut=cut)
        noise_seed = 0
        if options.action_noise_stdev:
            noise_seed = int(torch.randint(2**31 - 1, (), generator=self.noise,
                                           device=self.noise.device))
        return self.compiled(params, options, seed=seed, slots=slots,
                             streaming=self.host.envs.options.streaming, normalizer=stats,
                             collect=collect, noise_seed=noise_seed,
                             population=purpose != "test", cut=cut)
