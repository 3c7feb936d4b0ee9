"""One lock-step rollout: a batch of policies, one env each, each for ``num_episodes`` episodes.

The hot loop only does what must happen per step (policy, env step, deciding which envs are
still evaluating); rewards and flags are kept per step and turned into returns, episode
lengths and alive bonuses once, at the end, with cumulative sums.

Per env and step: the env is *active* while its solution still has episodes to run and has
not produced a non-finite observation. A step *counts* (an interaction) when the env was
active and the step was not gymnasium's next-step autoreset (the step right after ``done``).
Observations that an active policy acts on (first observations of episodes and all
non-terminal ones) feed the observation statistics.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from neurorun.envs import TorchVecEnv
from neurorun.nets import BatchedPolicy
from neurorun.problems.options import AliveBonus, RolloutOptions
from neurorun.problems.running_norm import RunningNorm

STATS_FLUSH_STEPS = 64  # observations are added to the statistics in chunks of this many steps


@dataclass
class RolloutResult:
    """Per solution (the first n rows): fitness and a non-finite flag; plus episode data."""

    fitness: Tensor  # (n,) float64, mean shaped return over num_episodes
    nonfinite: Tensor  # (n,) bool: a non-finite observation or reward was met
    episode_returns: Tensor  # (k,) float64, unshaped returns of finished episodes (finite ones)
    episode_lengths: Tensor  # (k,) int64
    interactions: int
    episodes: int
    vector_steps: int  # env.step calls
    collected: RunningNorm | None  # statistics of the observations seen


class _StatsBuffer:
    """Collects (obs, host mask) per step and adds them to a RunningNorm in chunks."""

    def __init__(self, stats: RunningNorm | None):
        self.stats = stats
        self.obs: list[Tensor] = []
        self.masks: list[np.ndarray] = []

    def add(self, obs: Tensor, mask: np.ndarray) -> None:
        if self.stats is None:
            return
        self.obs.append(obs)
        self.masks.append(mask)
        if len(self.obs) >= STATS_FLUSH_STEPS:
            self.flush()

    def flush(self) -> None:
        if self.stats is not None and self.obs:
            self.stats.update(torch.cat(self.obs), torch.from_numpy(np.concatenate(self.masks)))
            self.obs.clear()
            self.masks.clear()


def _host(x: Tensor) -> np.ndarray:
    """A numpy view (CPU) or copy (accelerator) of a small per-env tensor."""
    return x.numpy() if x.device.type == "cpu" else x.cpu().numpy()


def _all_finite(obs: Tensor) -> bool:
    total = obs.numpy().sum() if obs.device.type == "cpu" else obs.sum().item()
    return math.isfinite(total)


def rollout(
    env: TorchVecEnv,
    policy: BatchedPolicy,
    params: Tensor,
    num_solutions: int,
    options: RolloutOptions,
    *,
    seed: int | None,
    normalizer: RunningNorm | None = None,
    collect: RunningNorm | None = None,
    noise: torch.Generator | None = None,
) -> RolloutResult:
    """Run ``params (env.num_envs, D)``; rows from ``num_solutions`` on are padding.

    Per-env flags live on the host as numpy arrays: a few numpy ops on a few hundred bools
    cost far less than torch ops, and the loop must sync every step anyway (to stop).

    Args:
        normalizer: frozen statistics the observations are normalized with (None: raw).
        collect: statistics that the observations seen are added to (None: not collected).
        noise: generator of the Gaussian action noise (options.action_noise_stdev).
    """
    device = params.device
    policy.set_parameters(params)
    obs = env.reset(seed=seed)
    active = np.arange(env.num_envs) < num_solutions
    finite = np.ones(env.num_envs, dtype=bool)
    done = np.zeros(env.num_envs, dtype=bool)
    just_reset = done  # envs whose last step was the autoreset step: a new episode starts
    episodes_done = np.zeros(env.num_envs, dtype=np.int64)  # used when num_episodes > 1
    if normalizer is not None:  # (obs - mean) / stdev as one fused op: shift + obs * scale
        scale = 1.0 / normalizer.stdev.to(device, torch.float32)
        shift = -normalizer.mean.to(device, torch.float32) * scale
    buffer = _StatsBuffer(collect)
    rewards, counted, finished = [], [], []
    stdev = options.action_noise_stdev or 0.0
    # bool arrays: `a > b` is `a & ~b` in one op
    while True:
        if policy.is_recurrent and just_reset.any():
            policy.reset(torch.from_numpy(just_reset).to(device))
        counts = active > done  # an interaction of a still-evaluating solution
        if not _all_finite(obs):  # rare: find the rows, retire them
            ok = _host(torch.isfinite(obs).all(dim=1))
            finite &= ok
            active &= ok
            counts &= ok
            obs = torch.where(torch.from_numpy(ok).to(device)[:, None], obs, 0.0)
        buffer.add(obs, counts)
        actions = policy(torch.addcmul(shift, obs, scale) if normalizer is not None else obs)
        if stdev > 0:
            actions = actions + stdev * torch.randn(
                actions.shape, generator=noise, device=device, dtype=actions.dtype)
        obs, reward, done_tensor = env.step(actions)
        just_reset, done = done, _host(done_tensor)
        ends = done & counts
        if options.num_episodes == 1:
            active = active > ends
        else:
            episodes_done += ends
            active &= episodes_done < options.num_episodes
        rewards.append(reward)
        counted.append(counts)
        finished.append(ends)
        if not active.any():
            break
    buffer.flush()
    flags = [torch.from_numpy(np.stack(f)).to(device) for f in (counted, finished)]
    return _summarize(torch.stack(rewards).to(device, torch.float64), *flags,
                      torch.from_numpy(finite).to(device), num_solutions, options, collect)


def _alive_bonus(schedule: AliveBonus, t: Tensor) -> Tensor:
    """Bonus of a step at episode time ``t`` (from 1)."""
    gap = max(schedule.t1 - schedule.t0, 1)
    partial = schedule.bonus * (t - schedule.t0).to(torch.float64) / gap
    full = torch.full_like(partial, schedule.bonus)
    ramp = torch.where(t >= schedule.t0, partial, torch.zeros_like(partial))
    return torch.where(t >= schedule.t1, full, ramp)


def _summarize(
    rewards: Tensor, counted: Tensor, finished: Tensor, finite: Tensor, n: int,
    options: RolloutOptions, collect: RunningNorm | None,
) -> RolloutResult:
    """Per-episode returns and lengths from per-step (T, envs) rewards and flags."""
    num_eps = options.num_episodes
    rewards, counted, finished = rewards[:, :n], counted[:, :n], finished[:, :n]
    # episode number of each step: episodes finished strictly before it
    episode = (finished.long().cumsum(0) - finished.long()).clamp(max=num_eps).T  # (n, T)
    table = torch.zeros(n, num_eps + 1, dtype=torch.float64, device=rewards.device)
    lengths = torch.zeros(n, num_eps + 1, dtype=torch.int64, device=rewards.device)
    lengths.scatter_add_(1, episode, counted.T.long())
    raw = torch.where(counted, rewards, 0.0)
    returns = table.scatter_add(1, episode, raw.T)
    shaped = returns
    if options.shapes_rewards:
        step_reward = raw - options.decrease_rewards_by * counted
        if options.alive_bonus is not None:
            before = (lengths.cumsum(1) - lengths).gather(1, episode).T  # steps of earlier eps
            t = counted.long().cumsum(0) - before  # (T, n) time within the episode, from 1
            step_reward = step_reward + _alive_bonus(options.alive_bonus, t) * counted
        shaped = table.scatter_add(1, episode, step_reward.T)
    fitness = shaped[:, :num_eps].sum(1) / num_eps
    nonfinite = ~finite[:n] | ~torch.isfinite(fitness)
    done_eps = finished.sum(0)
    kept = (torch.arange(num_eps, device=rewards.device) < done_eps[:, None]) & ~nonfinite[:, None]
    return RolloutResult(
        fitness=fitness, nonfinite=nonfinite,
        episode_returns=returns[:, :num_eps][kept], episode_lengths=lengths[:, :num_eps][kept],
        interactions=int(counted.sum()), episodes=int(done_eps.sum()),
        vector_steps=rewards.shape[0], collected=collect,
    )
