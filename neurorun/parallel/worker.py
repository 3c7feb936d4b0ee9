"""What runs inside one ray actor: a Problem replica that evaluates sub-batches and shares.

Plain Python (ray wraps the class with ``ray.remote`` in the main process), so it can be
tested without ray. Besides its problem's keywords and, in distributed mode, the algorithm's
replica and noise table (once per algorithm), everything it receives and returns is tensors,
arrays, small dicts and ``EvaluationStats`` records.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np
import torch

from neurorun.algorithms.noise import weighted_sums
from neurorun.problems import EvaluationStats, RunningNorm, make_problem


class EvaluationWorker:
    """A Problem replica; the main process sends obs stats and seeds with every call.

    Args:
        problem_kwargs: the keywords of ``make_problem`` (``max_num_envs`` already this
            actor's share of the total).
    """

    def __init__(self, problem_kwargs: dict[str, Any]):
        self.problem = make_problem(**problem_kwargs)
        self.replica: Any = None  # the algorithm copy of distributed mode
        self.noise: dict[tuple[int, int], torch.Tensor] = {}  # (draw, first) -> share noise

    def pid(self) -> int:
        return os.getpid()

    def _prepare(self, obs_state: dict[str, Any] | None, noise_seed: int) -> None:
        if obs_state is not None:
            self.problem.set_obs_stats(RunningNorm.from_state_dict(obs_state))
        # Action noise restarts from a seed of the sub-batch, not of the actor: which actor
        # takes which sub-batch varies from run to run, results must not.
        self.problem.reseed_action_noise(noise_seed)

    def _finish(self, fitness: torch.Tensor, stats: EvaluationStats) -> dict[str, Any]:
        delta = self.problem.pop_obs_delta()
        return {"fitness": fitness.detach().cpu().numpy(), "stats": stats,
                "obs_delta": None if delta is None else delta.state_dict()}

    def evaluate(self, params: np.ndarray, seed: int, noise_seed: int,
                 obs_state: dict[str, Any] | None, cut: int | None = None) -> dict[str, Any]:
        """Fitness of one sub-batch; its solution ``j`` is seeded ``seed + j``, its episodes
        cut after ``cut`` steps (the main process's curriculum; None where it has none, as
        this replica then has none either)."""
        self._prepare(obs_state, noise_seed)
        fitness = self.problem.evaluate(torch.tensor(params), seed=int(seed), cut=cut)
        return self._finish(fitness, self.problem.last_stats)

    def _set_replica(self, replica: Any, table: Any) -> Any:
        if replica is not None:
            self.replica, self.noise = replica, {}
            if table is not None:  # the shared noise table, from ray's object store
                with warnings.catch_warnings():  # read-only shared memory; never written
                    warnings.simplefilter("ignore", UserWarning)
                    replica.noise.table = torch.from_numpy(table)
        if self.replica is None:
            raise RuntimeError("distributed share without an algorithm replica on this actor")
        return self.replica

    def sample_and_evaluate(self, replica: Any, table: Any, state: dict[str, torch.Tensor],
                            draw: int, first: int, size: int, env_seed: int, noise_seed: int,
                            obs_state: dict[str, Any] | None,
                            cut: int | None = None) -> dict[str, Any]:
        """Distributed mode, step 2: make samples ``first .. first + size - 1`` of generation
        ``draw`` from the sampling state, evaluate them (envs seeded ``env_seed + j``, episodes
        cut after ``cut`` steps); keep their noise for ``weighted_sums``. ``replica`` (and the
        noise ``table``) come once."""
        algo = self._set_replica(replica, table)
        if any(key[0] != draw for key in self.noise):  # a new generation: drop the last one's
            self.noise = {}
        algo.load_sampling_state(state)
        noise = algo.noise_rows(draw, first, size)
        self.noise[(draw, first)] = noise
        self._prepare(obs_state, noise_seed)
        fitness = self.problem.evaluate(algo.samples(noise), seed=int(env_seed), cut=cut)
        result = self._finish(fitness, self.problem.last_stats)
        result["norms"] = (noise.square().sum(1).cpu().numpy() if algo.NEEDS_NORMS else None)
        return result

    def weighted_sums(self, replica: Any, table: Any, draw: int,
                      shares: list[tuple[int, int]],
                      weights: list[dict[str, np.ndarray]]) -> dict[str, torch.Tensor]:
        """Distributed mode, step 4: the weighted noise sums of these shares, added (noise
        this actor did not keep, e.g. after it replaced a dead one, is made again)."""
        algo = self._set_replica(replica, table)
        total: dict[str, torch.Tensor] = {}
        for (first, size), share_weights in zip(shares, weights, strict=True):
            noise = self.noise.get((draw, first))
            if noise is None:
                noise = algo.noise_rows(draw, first, size)
            sums = weighted_sums(noise, {k: torch.from_numpy(v) for k, v in
                                         share_weights.items()}, algo.SUMS,
                                 mirrored=algo.mirrored)
            total = sums if not total else {k: total[k] + sums[k] for k in total}
        self.noise = {}
        return {k: v.detach().cpu() for k, v in total.items()}

    def close(self) -> None:
        self.problem.close()
