"""What runs inside one ray actor: a Problem replica that evaluates sub-batches and shares.

Plain Python (ray wraps the class with ``ray.remote`` in the main process), so it can be
tested without ray. Everything it receives and returns is tensors, arrays and small dicts.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
import torch

from neurorun.problems import RunningNorm, make_problem


class EvaluationWorker:
    """A Problem replica; the main process sends obs stats and seeds with every call.

    Args:
        problem_kwargs: the keywords of ``make_problem`` (``max_num_envs`` already this
            actor's share of the total).
    """

    def __init__(self, problem_kwargs: dict[str, Any]):
        self.problem = make_problem(**problem_kwargs)
        self.replica: Any = None  # the algorithm copy of distributed mode

    def pid(self) -> int:
        return os.getpid()

    def _prepare(self, obs_state: dict[str, Any] | None, noise_seed: int) -> None:
        if obs_state is not None:
            self.problem.set_obs_stats(RunningNorm.from_state_dict(obs_state))
        # Action noise restarts from a seed of the sub-batch, not of the actor: which actor
        # takes which sub-batch varies from run to run, results must not.
        self.problem.reseed_action_noise(noise_seed)

    def _finish(self, fitness: torch.Tensor, stats: dict[str, Any]) -> dict[str, Any]:
        delta = self.problem.pop_obs_delta()
        return {"fitness": fitness.detach().cpu().numpy(), "stats": stats,
                "obs_delta": None if delta is None else delta.state_dict()}

    def evaluate(self, params: np.ndarray, seed: int, noise_seed: int,
                 obs_state: dict[str, Any] | None) -> dict[str, Any]:
        """Fitness of one sub-batch; its solution ``j`` is seeded ``seed + j``."""
        self._prepare(obs_state, noise_seed)
        fitness = self.problem.evaluate(torch.tensor(params), seed=int(seed))
        return self._finish(fitness, dict(self.problem.last_stats))

    def sample_and_evaluate(self, replica: Any, distribution: dict[str, torch.Tensor],
                            share: dict[str, Any],
                            obs_state: dict[str, Any] | None) -> dict[str, Any]:
        """Distributed mode: sample this share from ``distribution``, evaluate, return gradients.

        ``share`` holds ``size``, ``sample_seed``, ``env_seed``, ``noise_seed``,
        ``round_stride`` (seed offset between adaptive rounds) and, for adaptive popsize,
        ``target_interactions`` and ``max_size``.
        """
        from neurorun.parallel.workload import merge_stats

        if replica is not None:
            self.replica = replica
        if self.replica is None:
            raise RuntimeError("distributed share without an algorithm replica on this actor")
        self.replica.distribution.load_state_dict(distribution)
        self._prepare(obs_state, share["noise_seed"])
        generator = torch.Generator(device=self.replica.device)
        generator.manual_seed(int(share["sample_seed"]))
        samples, fitness, stats = [], [], []
        interactions, size = 0, int(share["size"])
        target = share.get("target_interactions")
        max_size = share.get("max_size") or math.inf
        while True:
            batch = self.replica.distribution.sample(size, generator)
            seed = int(share["env_seed"]) + len(samples) * int(share["round_stride"])
            fitness.append(self.problem.evaluate(batch, seed=seed).to(batch.dtype))
            samples.append(batch)
            stats.append(dict(self.problem.last_stats))
            interactions += int(self.problem.last_stats["num_interactions"])
            done = len(samples) * size
            if target is None or interactions >= target or done >= max_size:
                break
        samples_all, fitness_all = torch.cat(samples), torch.cat(fitness)
        gradients = self.replica.compute_gradients(samples_all, fitness_all)
        result = self._finish(fitness_all, merge_stats(stats))
        result["gradients"] = {k: v.detach().cpu() for k, v in gradients.items()}
        return result

    def close(self) -> None:
        self.problem.close()
