"""What a Problem saves: the policy pickle, its resumable state, obs-stats deltas."""

from __future__ import annotations

import pickle
from datetime import datetime
from pathlib import Path
from typing import Any

import torch

from neurorun.problems.running_norm import RunningNorm


class ProblemState:
    """Mixin of ``Problem``: saving policies and state, syncing obs stats between copies."""

    def save_solution(self, solution: Any, path: str | Path,
                      obs_stats: RunningNorm | None = None) -> dict[str, Any]:
        """Pickle the reference's dict: ``solution``, ``policy`` (raw observations in),
        ``obs_mean``, ``obs_stdev``, ``obs_sum``, ``obs_sum_of_squares`` (when normalizing),
        ``interaction_count``, ``episode_count``, ``time``, ``env``, ``architecture``.
        ``obs_stats``: the statistics the solution was evaluated with (default: the current)."""
        stats = self.obs_stats if obs_stats is None else obs_stats
        vector = torch.as_tensor(solution, dtype=torch.float32).detach().reshape(-1).cpu()
        result: dict[str, Any] = {"solution": vector.clone(),
                                  "policy": self.to_policy(vector, stats)}
        if stats is not None:  # the reference's keys: all but the count
            result.update({k: v for k, v in stats.export().items() if k != "obs_count"})
        result.update(interaction_count=self.interaction_count,
                      episode_count=self.episode_count, time=datetime.now(),
                      env=self.env_options.spec, architecture=self.architecture)
        with open(path, "wb") as file:
            pickle.dump(result, file)
        return result

    def state_dict(self) -> dict[str, Any]:
        """Counters, obs stats and generator states: a loaded problem continues identically."""
        return {
            "interaction_count": self.interaction_count,
            "episode_count": self.episode_count,
            "obs_stats": None if self.obs_stats is None else self.obs_stats.state_dict(),
            "rng": self._rng.bit_generator.state,
            "noise_rng": self._noise.get_state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.interaction_count = int(state["interaction_count"])
        self.episode_count = int(state["episode_count"])
        if (state["obs_stats"] is None) != (self.obs_stats is None):
            raise ValueError("state and problem disagree on observation_normalization; load "
                             "a state saved with the same setting")
        if self.obs_stats is not None:
            self.obs_stats.load_state_dict(state["obs_stats"])
            self._obs_synced = self.obs_stats.copy()
        self._rng.bit_generator.state = state["rng"]
        self._noise.set_state(state["noise_rng"])

    def set_obs_stats(self, stats: RunningNorm) -> None:
        """Replace the observation statistics (a worker receiving the global ones)."""
        self.obs_stats = stats.to(self.obs_stats.device if self.obs_stats else "cpu").copy()
        self._obs_synced = self.obs_stats.copy()

    def pop_obs_delta(self) -> RunningNorm | None:
        """Statistics added since the last ``set_obs_stats``/``pop_obs_delta`` (for a worker
        to send to the main process, which merges them with ``obs_stats.update(delta)``)."""
        if self.obs_stats is None:
            return None
        delta = self.obs_stats - self._obs_synced
        self._obs_synced = self.obs_stats.copy()
        return delta
