"""One rollout: ``n`` policies, each for ``num_episodes`` episodes, streamed over env slots.

The (solution, episode) pairs form a work queue (``Schedule``): when a slot's episode ends, it
takes the next pending pair and its policy row gets that solution's parameters. The hot loop
only does what must happen per step (policy, env step, bookkeeping of the slots whose episode
ended); rewards, flags and the pair of each slot are kept per step and turned into returns,
lengths and alive bonuses once, at the end, keyed by pair. So fitness, counts and statistics
depend on the seeds and on the order in which episodes end, not on which slot ran what; but
for action noise, which one generator draws per slot and step (the compiled jax loop draws a
pair's from its own key instead).

With a cut (an episode-length curriculum), an episode that reaches the cut's counted steps
ends as one the env ended: the env resets the slot at its next step (``env.end_episodes``).

Per slot and step: the slot is *busy* while it holds a pair. A step *counts* (an interaction)
when the slot was busy and the step was not gymnasium's next-step autoreset (the step right
after ``done``, which starts the slot's next episode). Observations that a busy policy acts
on (first observations of episodes and all non-terminal ones) feed the observation
statistics. A slot that meets a non-finite observation (or, on a Discrete env, a NaN choice
score) fails its solution; fitness from the pairs' returns: ``returns.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
from gymnasium import spaces
from torch import Tensor

from neurorun.envs.base import EnvStepError, TorchVecEnv
from neurorun.nets import BatchedPolicy
from neurorun.problems.options import RolloutOptions
from neurorun.problems.returns import RolloutResult, pair_results
from neurorun.problems.running_norm import RunningNorm
from neurorun.problems.schedule import Schedule
from neurorun.problems.stats_buffer import Array, StatsBuffer


def _host(x: Array) -> np.ndarray:
    """A numpy view (CPU) or copy (accelerator) of a small per-env array."""
    if isinstance(x, np.ndarray):
        return x
    return x.numpy() if x.device.type == "cpu" else x.cpu().numpy()


def _stack(rows: list[Array]) -> Tensor:
    if isinstance(rows[0], np.ndarray):
        return torch.from_numpy(np.stack(rows))
    return torch.stack(rows)


def _total(values: Array) -> float:
    """The sum of ``values`` in one reduction: finite where they all are (or it overflows:
    then the rows are checked), NaN where one is NaN (or +inf and -inf meet)."""
    if isinstance(values, np.ndarray):
        return np.add.reduce(values, axis=None)  # the ufunc: no Python wrapper
    return values.numpy().sum() if values.device.type == "cpu" else values.sum().item()


def all_finite(obs: Array) -> bool:
    return math.isfinite(_total(obs))


def _kept_rows(values: Array, *, nan_only: bool) -> tuple[Array, np.ndarray]:
    """``values`` with the rows that hold a non-finite number (``nan_only``: a NaN) zeroed, and
    the host mask of the rows kept."""
    if isinstance(values, np.ndarray):
        bad = np.isnan(values) if nan_only else ~np.isfinite(values)
        ok = ~bad.any(axis=1)
        return np.where(ok[:, None], values, np.float32(0)), ok
    bad = torch.isnan(values) if nan_only else ~torch.isfinite(values)
    ok = _host(~bad.any(dim=1))
    return torch.where(torch.from_numpy(ok).to(values.device)[:, None], values, 0.0), ok


def _checked_step(obs: Array, act: Callable[[Array], Array],
                  discrete: bool) -> tuple[Array, Array, np.ndarray | None]:
    """A step's observations, actions and the rows that go on (None: all). A row whose
    observation is not finite is zeroed and fails its solution; on a Discrete env so does a
    row whose choice scores hold a NaN, which argmax would make a valid choice (a Box env
    passes a NaN action on, to meet a NaN observation or reward; -inf is a choice never
    taken)."""
    ok = None
    if not all_finite(obs):  # rare
        obs, ok = _kept_rows(obs, nan_only=False)
    actions = act(obs)
    if discrete and math.isnan(_total(actions)):  # rare
        actions, scored = _kept_rows(actions, nan_only=True)
        ok = scored if ok is None else ok & scored
    return obs, actions, ok


def make_act(
    policy: BatchedPolicy, params: Tensor, normalizer: RunningNorm | None, stdev: float,
    noise: torch.Generator | None, host: bool,
) -> Callable[[Array], Array]:
    """``obs -> actions``: normalization, the policy and action noise, set up once; on
    numpy arrays on the host path (numpy ops on small arrays cost less than torch ops)."""
    if normalizer is None and stdev <= 0:
        return policy
    if normalizer is not None:  # (obs - mean) / stdev as shift + obs * scale
        scale, shift = normalizer.affine(params.device, torch.float32)
        host_scale, host_shift = (scale.numpy(), shift.numpy()) if host else (None, None)

    def act(obs: Array) -> Array:
        if normalizer is not None and host:  # the same two float32 operations, one temporary
            obs = obs * host_scale
            obs += host_shift
        elif normalizer is not None:
            obs = torch.addcmul(shift, obs, scale)
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
    options: RolloutOptions,
    *,
    seed: int,
    streaming: bool = True,
    slots: int | None = None,
    normalizer: RunningNorm | None = None,
    collect: RunningNorm | None = None,
    noise: torch.Generator | None = None,
    cut: int | None = None,
) -> RolloutResult:
    """Run each of ``params (n, D)`` for ``options.num_episodes`` episodes on ``env``'s slots.

    Host path: with a numpy-speaking env (``env.host_arrays``) and parameters on the CPU the
    loop keeps observations, actions and rewards in numpy and converts once at the end.

    Args:
        seed: the rollout's base seed, each pair's by ``schedule.pair_seeds``.
        streaming: a slot whose episode ended takes the next pending pair; False: lock-step,
            slot j runs solution j's episodes (needs ``env.num_envs >= n``).
        slots: use at most this many of the env's envs (None: all); the rest stay idle.
        normalizer: frozen statistics the observations are normalized with (None: raw).
        collect: statistics that the observations seen are added to (None: not collected).
        noise: generator of the Gaussian action noise (options.action_noise_stdev).
        cut: end each episode after this many counted steps (an episode-length curriculum;
            needs ``env.ends_episodes``); None: episodes end where the env ends them.

    Raises:
        EnvStepError: a simulator failed; ``error.solution`` names the solution it ran.
    """
    device = params.device
    n, num_slots = params.shape[0], env.num_envs
    schedule = Schedule(n, options.num_episodes, num_slots, streaming=streaming, seed=seed,
                        usable=slots)
    host = env.host_arrays and device.type == "cpu"
    slot_params = params[torch.from_numpy(schedule.solutions(np.arange(num_slots)))]
    policy.set_parameters(slot_params)
    act = make_act(policy, params, normalizer, options.action_noise_stdev or 0.0, noise, host)
    buffer = StatsBuffer(collect)
    # grad off once for the whole loop, not per policy call (a switch costs microseconds)
    with torch.no_grad():
        seeds = schedule.reset_seeds()
        obs = env.reset_arrays(seed=seeds) if host else env.reset(seed=seeds)
        # envs of slots without a pair are not simulated where the backend can skip them
        step = env.step_arrays if host else env.step
        try:
            trace = run_steps(step, env, policy, params, act, buffer, schedule, obs, cut)
        except EnvStepError as error:
            slot = error.env_index
            error.solution = None if slot is None else int(schedule.solutions(slot))
            raise
    buffer.flush()
    return summarize(trace, schedule, device, options, collect,
                     simulated_all=not env.skips_inactive)


def run_steps(
    step: Callable[[Array, np.ndarray], tuple[Array, Array, Array]], env: TorchVecEnv,
    policy: BatchedPolicy, params: Tensor, act: Callable[[Array], Array],
    buffer: StatsBuffer, schedule: Schedule, obs: Array, cut: int | None,
) -> tuple[list[Array], list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """Steps until every pair has run; per step rewards, counted, slot pairs and busy flags.

    Per-slot flags live on the host as numpy arrays: numpy ops on a few hundred bools cost
    far less than torch ops, and the loop must sync every step anyway (to stop). Every op
    here runs once per vector step, so the loop keeps to the fewest numpy and torch calls;
    the queue is only touched on the steps where some episode ended.
    """
    discrete = isinstance(env.env_action_space, spaces.Discrete)
    done = np.zeros(len(schedule.slot_pair), dtype=bool)
    busy = schedule.slot_pair >= 0
    just_reset = done  # slots whose last step was the autoreset step: a new episode starts
    elapsed = np.zeros(len(done), dtype=np.int64)  # counted steps of each slot's episode (cut)
    rewards, counted, pairs, stepped = [], [], [], []
    while True:
        if policy.is_recurrent and just_reset.any():
            policy.reset(torch.from_numpy(just_reset))
        obs, actions, ok = _checked_step(obs, act, discrete)
        counts = schedule.observe(done, ok)
        if ok is not None:  # the failing slots retired
            busy = schedule.slot_pair >= 0
        buffer.add(obs, counts)
        obs, reward, done_array = step(actions, busy)
        rewards.append(reward)
        counted.append(counts)
        pairs.append(schedule.slot_pair)
        stepped.append(busy)
        just_reset, done = done, _host(done_array)
        if cut is not None:
            done = _cut_episodes(env, cut, elapsed, counts, done)
        ends = done & counts
        if np.count_nonzero(ends):  # count_nonzero: no Python-level wrapper, unlike any()
            taken = schedule.end(ends)
            if len(taken):
                solutions = schedule.solutions(taken)
                policy.update_rows(taken, params[torch.from_numpy(solutions)])
                if env.seeds_episodes:
                    env.seed_next_episodes(taken,
                                           schedule.pair_seeds(schedule.slot_pair[taken]))
            busy = schedule.slot_pair >= 0
            if not np.count_nonzero(busy):
                return rewards, counted, pairs, stepped
        elif not np.count_nonzero(busy):
            return rewards, counted, pairs, stepped


def _cut_episodes(env: TorchVecEnv, cut: int, elapsed: np.ndarray, counts: np.ndarray,
                  done: np.ndarray) -> np.ndarray:
    """``done`` with the episodes that reached ``cut`` counted steps ended too (their envs
    reset at their next step); ``elapsed`` (per slot) counts this step, 0 after an end."""
    elapsed += counts
    over = counts & ~done & (elapsed >= cut)
    if np.count_nonzero(over):
        env.end_episodes(np.flatnonzero(over))
        done = done | over
    elapsed[done] = 0
    return done


def summarize(
    trace: tuple[list[Array], list[np.ndarray], list[np.ndarray], list[np.ndarray]],
    schedule: Schedule, device: torch.device, options: RolloutOptions,
    collect: RunningNorm | None, *, simulated_all: bool,
) -> RolloutResult:
    """Per-pair returns and lengths from per-step (T, slots) rewards, flags and pairs."""
    rewards, counted, pairs, stepped = trace
    counted_steps = np.stack(counted)  # (T, slots)
    ids = np.stack(pairs)[counted_steps]  # pair of each counted step, in time order
    reward = _stack(rewards).to(device, torch.float64)[torch.from_numpy(counted_steps).to(device)]
    total = schedule.total
    lengths = torch.from_numpy(np.bincount(ids, minlength=total)).to(device)
    returns = torch.zeros(total, dtype=torch.float64, device=device).index_add(
        0, torch.from_numpy(ids).to(device), reward)
    fitness, nonfinite, kept = pair_results(returns, lengths, schedule.finished,
                                            schedule.failed, schedule.n, options)
    steps = len(counted)
    return RolloutResult(
        fitness=fitness, nonfinite=nonfinite,
        episode_returns=returns[kept], episode_lengths=lengths[kept], lengths=lengths,
        interactions=len(ids), episodes=int(schedule.finished.sum()), vector_steps=steps,
        simulated_steps=steps * len(schedule.slot_pair) if simulated_all
        else int(np.count_nonzero(np.stack(stepped))),
        collected=collect,
    )
