"""``Problem``: a population of policy parameter vectors to fitness, after EvoTorch's
VecGymNE and GymNE (``make_problem`` lists the options). It builds the parts and keeps what
lasts across calls: the counters, the observation statistics and the generator states. The
rollouts are ``evaluation.Evaluation``'s; episode seeds: ``schedule.pair_seeds``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from neurorun.envs import env_spaces
from neurorun.nets import BatchedPolicy, make_network, parameter_count, vector_to_module
from neurorun.problems.evaluation import Evaluation
from neurorun.problems.evaluator import EvaluationStats, EvaluatorRecord
from neurorun.problems.export import EnvPolicy
from neurorun.problems.host_evaluation import EvaluationError, HostEvaluation
from neurorun.problems.jax.rollout import compiled_rollout
from neurorun.problems.memory import check_compiled, check_results, check_samples
from neurorun.problems.obs_sync import ObsSync
from neurorun.problems.options import REFERENCE_INITIAL_BOUNDS, EnvOptions, RolloutOptions
from neurorun.problems.running_norm import MIN_VARIANCE, RunningNorm
from neurorun.problems.solutions import cpu_vector, env_policy, save_solution

__all__ = ["EvaluationError", "Problem"]


class Problem:
    """A population evaluator on vectorized environments (build it with ``make_problem``)."""

    def __init__(self, env: EnvOptions, network: Any, rollout_options: RolloutOptions, *,
                 network_args: dict[str, Any] | None = None,
                 observation_normalization: bool = False,
                 observation_min_variance: float = MIN_VARIANCE,
                 initial_bounds: tuple[float, float] = REFERENCE_INITIAL_BOUNDS,
                 seed: int | None = None,
                 jit: bool = True):
        self.rollout_options = rollout_options
        self.device = torch.device(env.device)
        self.observation_space, self.action_space, self.env_action_space = env_spaces(
            env.spec, **env.config)
        self.obs_length = int(np.prod(self.observation_space.shape))
        self.act_length = int(np.prod(self.action_space.shape))
        self.architecture = network if isinstance(network, str) else repr(network)
        self.network = make_network(network, obs_length=self.obs_length,
                                    act_length=self.act_length,
                                    obs_space=self.observation_space,
                                    act_space=self.env_action_space,
                                    network_args=network_args)
        self.solution_length = parameter_count(self.network)
        self.policy = BatchedPolicy(self.network)
        self.policy.check_env_sizes(self.obs_length, self.act_length, env.spec)
        self.host = HostEvaluation(env, self.policy, self.device)
        self.initial_bounds = (float(initial_bounds[0]), float(initial_bounds[1]))
        self.obs_stats = (RunningNorm(self.obs_length, min_variance=observation_min_variance)
                          if observation_normalization else None)
        self._obs_sync = ObsSync(self.obs_stats)
        self.interaction_count = 0
        self.episode_count = 0
        self.last_stats = EvaluationStats()  # of the last evaluate call
        self._rng = np.random.default_rng(seed)
        self._noise = torch.Generator(device=self.device)
        self._noise.manual_seed(int(self._rng.integers(2**63 - 1)))
        # the compiled evaluation (jax envs with a jax form of the network), else None
        self.jax_rollout = (compiled_rollout(env, self.network, self.architecture, self.device)
                            if jit else None)
        self.evaluation = Evaluation(self.host, self.jax_rollout, rollout_options, self._noise)

    @property
    def env_options(self) -> EnvOptions:
        """The env's options: one record, which the host loop reads too."""
        return self.host.envs.options

    def check_capacity(self, popsize: int, num_test_episodes: int = 0) -> None:
        """ValueError, before anything runs or compiles, when a generation of ``popsize``
        would not fit the device's free memory: on jax envs the compiled evaluation, elsewhere
        the generation's samples; on any env, the results of its episodes and of a center
        evaluation of ``num_test_episodes`` episodes (``problems/memory.py``'s checks)."""
        if self.jax_rollout is None:
            check_samples(popsize, self.solution_length, self.device)
        else:
            check_compiled(popsize, self.evaluation.slots(popsize),
                           *self.jax_rollout.memory_bytes(popsize, self.solution_length),
                           device=self.device, devices=len(self.jax_rollout.devices),
                           spec=self.env_options.spec)
        check_results(popsize, self.rollout_options.num_episodes, num_test_episodes)

    @property
    def observation_normalization(self) -> bool:
        return self.obs_stats is not None

    def close(self) -> None:
        self.host.envs.close()

    # ----- evaluation -----
    def _as_params(self, params: Any) -> Tensor:
        params = torch.as_tensor(params, dtype=torch.float32, device=self.device)
        if params.dim() == 1:
            params = params[None]
        if params.dim() != 2 or params.shape[1] != self.solution_length:
            raise ValueError(f"params of shape {tuple(params.shape)}; expected (P, "
                             f"{self.solution_length}) (P solutions of solution_length)")
        return params

    def draw_seed(self) -> int:
        """The base seed of the next evaluation: what ``evaluate(params)`` uses without one."""
        return int(self._rng.integers(2**31 - 1))

    def reseed_action_noise(self, seed: int) -> None:
        """Restart the action-noise generator (ray actors: per sub-batch, not per actor)."""
        self._noise.manual_seed(int(seed))

    def episode_cut(self, interactions: int | None = None) -> int | None:
        """The training episodes' length after ``interactions`` (None: this problem's count):
        the curriculum's (None: no curriculum)."""
        lengths = self.rollout_options.episode_lengths
        count = self.interaction_count if interactions is None else interactions
        return None if lengths is None else lengths.at(count)

    def evaluate(self, params: Any, seed: int | None = None, cut: int | None = None) -> Tensor:
        """Fitness ``(P,)`` (mean return over ``num_episodes`` episodes) of ``params (P, D)``,
        their episodes cut after ``cut`` steps (None: ``episode_cut()``)."""
        fitness, self.last_stats = self.evaluation.population(
            self._as_params(params), self.draw_seed() if seed is None else int(seed),
            self.episode_cut() if cut is None else int(cut), self.obs_stats)
        self.add_counts(self.last_stats)
        return fitness

    def add_counts(self, stats: EvaluationStats) -> None:
        """Count an evaluation's env steps and episodes (this problem's own, or those its ray
        actors made for it): the one writer of ``interaction_count`` and ``episode_count``."""
        self.interaction_count += stats.num_interactions
        self.episode_count += stats.num_episodes

    def test_episodes(self, solution: Any, num_episodes: int,
                      seed: int) -> tuple[Tensor, Tensor]:
        """Returns and lengths ``(num_episodes,)`` of one solution, episode k as solution k's first
        (``schedule.pair_seeds``), for the center evaluation and ``neurorun-eval``: no action
        noise, no shaping, counters and obs stats left alone; NaN for an episode that met a
        non-finite value."""
        return self.evaluation.test(self._as_params(solution)[:1], int(num_episodes),
                                    int(seed), self.obs_stats)

    # ----- policies -----
    def to_policy(self, solution: Any, obs_stats: RunningNorm | None = None) -> EnvPolicy:
        """The policy on raw observations: obs normalization (``obs_stats``, default: the
        current statistics) and action clipping inside."""
        return env_policy(vector_to_module(self.network, cpu_vector(solution)),
                          self.obs_stats if obs_stats is None else obs_stats,
                          self.observation_space, self.env_action_space)

    def sample_initial(self, num: int, generator: torch.Generator | None = None) -> Tensor:
        """``(num, D)`` uniform samples within ``initial_bounds``."""
        low, high = self.initial_bounds
        values = torch.rand(int(num), self.solution_length, generator=generator)
        return (low + (high - low) * values).to(self.device)

    # ----- saving, resuming, and the observation statistics of ray workers -----
    def save_solution(self, solution: Any, path: str | Path,
                      obs_stats: RunningNorm | None = None) -> dict[str, Any]:
        """Pickle the solution, its policy and statistics (``obs_stats``: those it was
        evaluated with; default: the current) with the counters (``solutions.save_solution``)."""
        stats = self.obs_stats if obs_stats is None else obs_stats
        return save_solution(path, solution, self.to_policy(solution, stats), stats,
                             interaction_count=self.interaction_count,
                             episode_count=self.episode_count, env=self.env_options.spec,
                             architecture=self.architecture)

    def state_dict(self) -> EvaluatorRecord:
        """Counters, obs stats and generator states: a loaded problem continues identically."""
        return EvaluatorRecord(
            interaction_count=self.interaction_count,
            episode_count=self.episode_count,
            obs_stats=None if self.obs_stats is None else self.obs_stats.state_dict(),
            rng=self._rng.bit_generator.state,
            noise_rng=self._noise.get_state(),
        )

    def load_state_dict(self, state: EvaluatorRecord) -> None:
        self.interaction_count = int(state["interaction_count"])
        self.episode_count = int(state["episode_count"])
        if (state["obs_stats"] is None) != (self.obs_stats is None):
            raise ValueError("state and problem disagree on observation_normalization; load "
                             "a state saved with the same setting")
        if self.obs_stats is not None:
            self.obs_stats.load_state_dict(state["obs_stats"])
            self._obs_sync.mark(self.obs_stats)
        self._rng.bit_generator.state = state["rng"]
        self._noise.set_state(state["noise_rng"])

    def set_obs_stats(self, stats: RunningNorm) -> None:
        """Replace the observation statistics (a worker receiving the global ones)."""
        self.obs_stats = stats.to(self.obs_stats.device if self.obs_stats else "cpu").copy()
        self._obs_sync.mark(self.obs_stats)

    def pop_obs_delta(self) -> RunningNorm | None:
        """Statistics added since the last ``set_obs_stats``/``pop_obs_delta`` (for a worker
        to send to the main process, which merges them with ``obs_stats.update(delta)``)."""
        if self.obs_stats is None:
            return None
        return self._obs_sync.delta(self.obs_stats)
