"""``make_problem``: a Problem from a config's plain values (the keywords
``build.problem_kwargs`` gives, which ray actors rebuild their replicas from)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from neurorun.envs import backend_of
from neurorun.problems.options import (
    EnvOptions,
    RolloutOptions,
    parse_initial_bounds,
)
from neurorun.problems.problem import Problem
from neurorun.problems.running_norm import MIN_VARIANCE


def make_problem(
    env: str,
    network: Any = "Linear(obs_length, act_length)",
    *,
    network_args: Mapping[str, Any] | None = None,
    env_config: Mapping[str, Any] | None = None,
    num_episodes: int = 1,
    episode_length: int | None = None,
    decrease_rewards_by: float | None = 0.0,
    alive_bonus_schedule: Sequence[float] | None = None,
    action_noise_stdev: float | None = None,
    episode_length_schedule: Sequence[Sequence[int]] | None = None,
    observation_normalization: bool = False,
    observation_min_variance: float = MIN_VARIANCE,
    max_num_envs: int | None = None,
    initial_bounds: Sequence[float] | None = None,
    device: str = "cpu",
    seed: int | None = None,
    vectorization: str = "auto",
    streaming: bool = True,
    num_threads: int | None = None,
    jit: bool = True,
    devices: int | str | Sequence[int] = "auto",
) -> Problem:
    """Build a Problem.

    Args:
        env: "gym::Id", "Id", "envpool::Id", "brax::name" or "pkg.module:factory" (see
            neurorun.envs; a bare id is gymnasium's: ``resolve_backend`` picks EnvPool).
        network: a network string, "pkg.module:Factory", or a module.
        network_args: constants of the network string / factory keywords.
        env_config: keyword arguments of the environment.
        num_episodes: episodes per solution; fitness is their mean (shaped) return.
        episode_length: episodes end after this many steps (or earlier at the env's limit).
        decrease_rewards_by: subtracted from every reward.
        alive_bonus_schedule: (t, b) or (t0, t1, b), see AliveBonus.
        action_noise_stdev: stdev of Gaussian noise added to the policy outputs.
        episode_length_schedule: [[steps, length], ...], the training episodes' length by
            the interactions so far (a curriculum; see EpisodeLengths).
        observation_normalization: normalize observations with running statistics.
        observation_min_variance: their variance floor (0: none, a constant feature ignored).
        max_num_envs: at most this many envs at once; more solutions run in sub-batches.
            None: one env per solution of an evaluate call.
        initial_bounds: (low, high) for initial parameters; None: (-1e-5, 1e-5).
        device: torch device of policies and bookkeeping.
        seed: seeds env resets and action noise.
        vectorization: gymnasium only: "auto", "native", "sync" or "async" (with an
            ``episode_length_schedule``: "sync", which "auto" then picks).
        streaming: a work queue of (solution, episode) pairs over the env slots (False:
            lock-step sub-batches, each slot running one solution's episodes).
        num_threads: EnvPool's threads (None: the CPUs this process may use).
        jit: jax envs (brax, Playground): evaluate as one compiled jax program (False: step
            by step from Python, as other backends; a network without a jax form always is).
        devices: the jax devices that share the compiled evaluation: "auto" (every local
            device), a count, or a list of device ids (see neurorun.problems.devices).
    """
    if episode_length_schedule is not None:  # the curriculum cuts single episodes
        vectorization = backend_of(env).vectorization_for_cuts(vectorization)
    env_options = EnvOptions(
        spec=env, config=dict(env_config or {}), vectorization=vectorization,
        episode_length=None if episode_length is None else int(episode_length),
        max_num_envs=None if max_num_envs is None else int(max_num_envs), device=str(device),
        streaming=bool(streaming), num_threads=None if num_threads is None else int(num_threads),
        devices=devices,
    )
    rollout_options = RolloutOptions.parse(num_episodes, decrease_rewards_by,
                                           alive_bonus_schedule, action_noise_stdev,
                                           episode_length_schedule)
    return Problem(env_options, network, rollout_options,
                   network_args=dict(network_args or {}),
                   observation_normalization=bool(observation_normalization),
                   observation_min_variance=float(observation_min_variance),
                   initial_bounds=parse_initial_bounds(initial_bounds), seed=seed,
                   jit=bool(jit))
