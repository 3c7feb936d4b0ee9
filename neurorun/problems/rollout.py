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
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from neurorun.envs import TorchVecEnv
from neurorun.nets import BatchedPolicy
from neurorun.problems.options import AliveBonus, RolloutOptions
from neurorun.problems.running_norm import RunningNorm

# observations are added to the statistics in chunks of about this many numbers: one update
# costs a few hundred microseconds, so small observations are gathered over many steps
STATS_FLUSH_SIZE = 1 << 20


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


Array = Tensor | np.ndarray  # per-env data: numpy arrays on the host path, else tensors


class _StatsBuffer:
    """Collects (obs, host mask) per step and adds them to a RunningNorm in chunks."""

    def __init__(self, stats: RunningNorm | None):
        self.stats = stats
        self.obs: list[Array] = []
        self.masks: list[np.ndarray] = []
        self.steps_per_flush = 1  # set at the first add, from the size of the observations

    def add(self, obs: Array, mask: np.ndarray) -> None:
        if self.stats is None:
            return
        if not self.obs:
            self.steps_per_flush = max(1, STATS_FLUSH_SIZE // math.prod(obs.shape))
        self.obs.append(obs)
        self.masks.append(mask)
        if len(self.obs) >= self.steps_per_flush:
            self.flush()

    def flush(self) -> None:
        if self.stats is None or not self.obs:
            return
        mask = np.concatenate(self.masks)
        if isinstance(self.obs[0], np.ndarray):  # select the rows on the host: fewer to add
            self.stats.update(torch.from_numpy(np.concatenate(self.obs)[mask]))
        else:
            self.stats.update(torch.cat(self.obs), torch.from_numpy(mask))
        self.obs.clear()
        self.masks.clear()


def _host(x: Array) -> np.ndarray:
    """A numpy view (CPU) or copy (accelerator) of a small per-env array."""
    if isinstance(x, np.ndarray):
        return x
    return x.numpy() if x.device.type == "cpu" else x.cpu().numpy()


def _stack(rows: list[Array]) -> Tensor:
    if isinstance(rows[0], np.ndarray):
        return torch.from_numpy(np.stack(rows))
    return torch.stack(rows)


def _all_finite(obs: Array) -> bool:
    # one reduction: the sum of finite values is finite (or overflows: then the rows are checked)
    if isinstance(obs, np.ndarray):
        return math.isfinite(np.add.reduce(obs, axis=None))  # the ufunc: no Python wrapper
    return math.isfinite(obs.numpy().sum() if obs.device.type == "cpu" else obs.sum().item())


def _finite_rows(obs: Array) -> tuple[Array, np.ndarray]:
    """``obs`` with its non-finite rows zeroed, and the host mask of the finite rows."""
    if isinstance(obs, np.ndarray):
        ok = np.isfinite(obs).all(axis=1)
        return np.where(ok[:, None], obs, np.float32(0)), ok
    ok = _host(torch.isfinite(obs).all(dim=1))
    return torch.where(torch.from_numpy(ok).to(obs.device)[:, None], obs, 0.0), ok


def _make_act(
    policy: BatchedPolicy, params: Tensor, normalizer: RunningNorm | None, stdev: float,
    noise: torch.Generator | None, host: bool,
) -> Callable[[Array], Array]:
    """``obs -> actions``: normalization, the policy and action noise, set up once; on
    numpy arrays on the host path (numpy ops on small arrays cost less than torch ops)."""
    if normalizer is None and stdev <= 0:
        return policy
    if normalizer is not None:  # (obs - mean) / stdev as shift + obs * scale
        scale = 1.0 / normalizer.stdev.to(params.device, torch.float32)
        shift = -normalizer.mean.to(params.device, torch.float32) * scale
        host_scale, host_shift = (scale.numpy(), shift.numpy()) if host else (None, None)

    def act(obs: Array) -> Array:
        if normalizer is not None:
            obs = obs * host_scale + host_shift if host else torch.addcmul(shift, obs, scale)
        actions = policy(obs)
        if stdev > 0:
            drawn = torch.randn(actions.shape, generator=noise, device=params.device,
                                dtype=params.dtype)
            actions = actions + stdev * (drawn.numpy() if host else drawn)
        return actions

    return act


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

    Host path: with a numpy-speaking env (``env.host_arrays``) and parameters on the CPU the
    loop keeps observations, actions and rewards in numpy and converts once at the end.

    Args:
        normalizer: frozen statistics the observations are normalized with (None: raw).
        collect: statistics that the observations seen are added to (None: not collected).
        noise: generator of the Gaussian action noise (options.action_noise_stdev).
    """
    device = params.device
    host = env.host_arrays and device.type == "cpu"
    policy.set_parameters(params)
    act = _make_act(policy, params, normalizer, options.action_noise_stdev or 0.0, noise, host)
    buffer = _StatsBuffer(collect)
    # grad off once for the whole loop, not per policy call (a switch costs microseconds)
    with torch.no_grad():
        obs = env.reset_arrays(seed=seed) if host else env.reset(seed=seed)
        # envs of finished solutions are not simulated where the backend can skip them
        step = env.step_arrays if host else env.step
        trace = _run_steps(step, policy, act, buffer, env.num_envs, num_solutions,
                           options.num_episodes, obs)
    buffer.flush()
    rewards, counted, finished, finite = trace
    flags = [torch.from_numpy(np.stack(f)).to(device) for f in (counted, finished)]
    return _summarize(_stack(rewards).to(device, torch.float64), *flags,
                      torch.from_numpy(finite).to(device), num_solutions, options, collect)


def _run_steps(
    step: Callable[[Array, np.ndarray], tuple[Array, Array, Array]], policy: BatchedPolicy,
    act: Callable[[Array], Array], buffer: _StatsBuffer, num_envs: int, num_solutions: int,
    num_episodes: int, obs: Array,
) -> tuple[list[Array], list[np.ndarray], list[np.ndarray], np.ndarray]:
    """Steps until every solution has run its episodes; per step rewards, counted, finished.

    ``step(actions, active)`` may leave out the envs that are not ``active``.

    Per-env flags live on the host as numpy arrays: numpy ops on a few hundred bools cost
    far less than torch ops, and the loop must sync every step anyway (to stop). Every op
    here runs once per vector step, so the loop keeps to the fewest numpy and torch calls.
    """
    active = np.arange(num_envs) < num_solutions
    finite = np.ones(num_envs, dtype=bool)
    done = np.zeros(num_envs, dtype=bool)
    just_reset = done  # envs whose last step was the autoreset step: a new episode starts
    episodes_done = np.zeros(num_envs, dtype=np.int64)  # used when num_episodes > 1
    rewards, counted, finished = [], [], []
    # bool arrays: `a > b` is `a & ~b` in one op
    while True:
        if policy.is_recurrent and just_reset.any():
            policy.reset(torch.from_numpy(just_reset))
        counts = active > done  # an interaction of a still-evaluating solution
        if not _all_finite(obs):  # rare: find the rows, retire them
            obs, ok = _finite_rows(obs)
            finite &= ok
            active &= ok
            counts &= ok
        buffer.add(obs, counts)
        obs, reward, done_array = step(act(obs), active)
        just_reset, done = done, _host(done_array)
        ends = done & counts
        if num_episodes == 1:
            active = active > ends
        else:
            episodes_done += ends
            active &= episodes_done < num_episodes
        rewards.append(reward)
        counted.append(counts)
        finished.append(ends)
        if not np.count_nonzero(active):  # count_nonzero: no Python-level wrapper, unlike any()
            return rewards, counted, finished, finite


def _alive_bonus(schedule: AliveBonus, t: Tensor) -> Tensor:
    """Bonus of a step at episode time ``t`` (from 1)."""
    gap = max(schedule.t1 - schedule.t0, 1)
    partial = schedule.bonus * (t - schedule.t0).to(torch.float64) / gap
    full = torch.full_like(partial, schedule.bonus)
    ramp = torch.where(t >= schedule.t0, partial, torch.zeros_like(partial))
    return torch.where(t >= schedule.t1, full, ramp)


def _by_episode(values: Tensor, episode: Tensor | None, table: Tensor) -> Tensor:
    """``table (n, num_eps + 1)`` plus per-step ``values (T, n)`` summed by episode number."""
    if episode is None:  # one episode: every counted step is in it, a plain sum is enough
        table = table.clone()
        table[:, 0] = values.sum(0)
        return table
    return table.scatter_add(1, episode, values.T.to(table.dtype))


def _summarize(
    rewards: Tensor, counted: Tensor, finished: Tensor, finite: Tensor, n: int,
    options: RolloutOptions, collect: RunningNorm | None,
) -> RolloutResult:
    """Per-episode returns and lengths from per-step (T, envs) rewards and flags."""
    num_eps = options.num_episodes
    rewards, counted, finished = rewards[:, :n], counted[:, :n], finished[:, :n]
    # episode number of each step: episodes finished strictly before it. With one episode no
    # counted step comes after the episode's end, so no number is needed (it saves the
    # cumsum and scatters, milliseconds per evaluation)
    episode = None
    if num_eps > 1:
        episode = (finished.long().cumsum(0) - finished.long()).clamp(max=num_eps).T  # (n, T)
    table = torch.zeros(n, num_eps + 1, dtype=torch.float64, device=rewards.device)
    lengths = _by_episode(counted, episode, table.long())
    raw = torch.where(counted, rewards, 0.0)
    returns = _by_episode(raw, episode, table)
    shaped = returns
    if options.shapes_rewards:
        step_reward = raw - options.decrease_rewards_by * counted
        if options.alive_bonus is not None:
            t = counted.long().cumsum(0)  # (T, n) time within the episode, from 1
            if episode is not None:  # minus the steps of earlier episodes
                t = t - (lengths.cumsum(1) - lengths).gather(1, episode).T
            step_reward = step_reward + _alive_bonus(options.alive_bonus, t) * counted
        shaped = _by_episode(step_reward, episode, table)
    fitness = shaped[:, :num_eps].sum(1) / num_eps
    nonfinite = ~finite[:n] | ~torch.isfinite(fitness)
    done_eps = finished.sum(0)
    kept = (torch.arange(num_eps, device=rewards.device) < done_eps[:, None]) & ~nonfinite[:, None]
    return RolloutResult(
        fitness=fitness, nonfinite=nonfinite,
        episode_returns=returns[:, :num_eps][kept], episode_lengths=lengths[:, :num_eps][kept],
        interactions=int(lengths.sum()), episodes=int(done_eps.sum()),
        vector_steps=rewards.shape[0], collected=collect,
    )
