"""The traced part of the compiled evaluation: one device's stage of a rollout as a jax loop.

Each device runs its own share of the (solution, episode) pairs (``jax_rollout.split_pairs``)
as a queue over its own env slots; the tables of its pairs (their solution, their reset key,
their action-noise key) are its inputs, so a pair's episode does not depend on the slot or
device that runs it. A stage steps the device's slots until every pair has run, or, when
``limit >= 0``, until its queue is empty and at most ``limit`` slots are still busy (the host
then moves those slots to a smaller batch: see :mod:`neurorun.problems.jax_rollout`). Each
step does what ``rollout._run_steps`` does per step, on arrays: recurrent state reset,
non-finite observations retire their slot's solution, observation statistics from counted
steps, the policy on normalized observations, action noise, the env step with next-step
autoreset, per-pair returns and lengths, and the next pending pairs for slots whose episode
ended. The queue's rules (which pair a slot runs, which steps count, what a non-finite
observation retires) are :mod:`neurorun.problems.schedule`'s, the host loop's own, on jax
arrays. Nothing here communicates across devices: each device's loop ends on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from neurorun.envs.jax_env import next_step_autoreset
from neurorun.nets.arrays import ArrayPolicy, jax_ops
from neurorun.problems import schedule
from neurorun.problems.schedule import Queue


@dataclass(frozen=True)
class Static:
    """What one compiled program is specialized to (jit's static arguments): one device's
    sizes and which optional steps it includes."""

    slots: int  # the env batch of this stage
    solutions: int  # n: solutions of the whole evaluation (row n of params: no solution)
    pairs: int  # this device's (solution, episode) pairs, padding included
    following: int  # lock-step: a slot's next pair is its pair + this (0: streaming)
    normalize: bool  # observations normalized with frozen statistics
    collect: bool  # observation statistics collected
    noisy: bool  # Gaussian action noise

    @property
    def streaming(self) -> bool:
        return self.following == 0


class Inputs(NamedTuple):
    """What every step reads and no step changes."""

    params: Any  # (n + 1, D) every solution's parameters; row n (padding pairs): zeros
    pair_solution: Any  # (T,) int32 solution of each of this device's pairs (n: padding)
    pair_keys: Any  # (T, 2) uint32 reset key of each pair's episode
    noise_keys: Any  # (T, 2) uint32 action-noise key of each pair (step t: fold_in t)
    center: Any  # (O,) observation statistics are sums of obs - center (less rounding)
    scale: Any  # (O,) normalization: obs * scale + shift
    shift: Any
    stdev: Any  # () action noise


class Carry(NamedTuple):
    """One device's loop state (B env slots, T pairs, n solutions, O observation size)."""

    env: Any  # the batched env state
    slot_keys: Any  # (B, 2) the key of each slot's next reset: its pair's
    done: Any  # (B,) the last step ended the slot's episode: the next step resets it
    just_reset: Any  # (B,) the last step was the slot's autoreset step
    queue: Queue  # which pair each slot runs, finished pairs, failed solutions
    slot_params: Any  # (B, D) parameters of each slot's solution
    policy_state: tuple  # recurrent state, one (B, h) array per state of each recurrent layer
    returns: Any  # (T,) float32 unshaped returns, compensated (Kahan) by returns_error
    returns_error: Any
    lengths: Any  # (T,) int32 counted steps
    obs_sum: Any  # (B, O) compensated sums of obs - center over counted steps, per slot
    obs_sum_error: Any
    obs_squares: Any  # (B, O) compensated sums of (obs - center) ** 2
    obs_squares_error: Any
    obs_count: Any  # (B,) int32
    steps: Any  # () int32 vector steps of this stage


BATCHED = ("env", "slot_keys", "done", "just_reset", "slot_params", "policy_state", "obs_sum",
           "obs_sum_error", "obs_squares", "obs_squares_error", "obs_count")


def kahan(total: Any, error: Any, value: Any) -> tuple[Any, Any]:
    """``total + value`` with the rounding error carried in ``error`` (compensated sum)."""
    y = value - error
    t = total + y
    return t, (t - total) - y


def start(env: Any, policy: ArrayPolicy, static: Static, inputs: Inputs) -> tuple[Carry, Any]:
    """The first carry of a device's rollout: slot b takes pair b (none past the pairs, a
    padding pair or, lock-step, past the device's solutions), its env reset with that pair's
    key; and the mean first observation of the busy slots (the statistics' center)."""
    slots, pairs = static.slots, static.pairs
    index = jnp.minimum(jnp.arange(slots), pairs - 1)
    queue = schedule.start(jax_ops(), inputs.pair_solution, static.solutions, slots,
                           static.following)
    slot_keys = inputs.pair_keys[index]
    state = env.reset(slot_keys)
    busy = queue.slot_pair >= 0
    carry = Carry(
        env=state, slot_keys=slot_keys, done=jnp.zeros(slots, bool),
        just_reset=jnp.zeros(slots, bool), queue=queue,
        slot_params=inputs.params[inputs.pair_solution[index]],
        policy_state=policy.zero_state(jax_ops(), slots, jnp.float32),
        returns=jnp.zeros(pairs, jnp.float32), returns_error=jnp.zeros(pairs, jnp.float32),
        lengths=jnp.zeros(pairs, jnp.int32), **_zero_statistics(slots, state.obs.shape[1]),
        steps=jnp.int32(0))
    first_obs = jnp.where(busy[:, None], state.obs, 0.0).sum(0)
    return carry, (first_obs, jnp.count_nonzero(busy))


def _zero_statistics(slots: int, size: int) -> dict[str, Any]:
    zeros = jnp.zeros((slots, size), jnp.float32)
    return {"obs_sum": zeros, "obs_sum_error": zeros, "obs_squares": zeros,
            "obs_squares_error": zeros, "obs_count": jnp.zeros(slots, jnp.int32)}


def stage(env: Any, policy: ArrayPolicy, static: Static, inputs: Inputs, carry: Carry,
          limit: Any) -> Carry:
    """Steps until no slot is busy, or (``limit >= 0``) the queue is empty and at most
    ``limit`` slots are busy."""
    step = next_step_autoreset(env)

    def going(c: Carry) -> Any:
        busy = jnp.count_nonzero(c.queue.slot_pair >= 0)
        pending = static.streaming and (c.queue.next_pair < static.pairs)
        return (busy > 0) & ((limit < 0) | pending | (busy > limit))

    carry = carry._replace(steps=jnp.int32(0), **_zero_statistics(*carry.obs_sum.shape))
    return jax.lax.while_loop(going, lambda c: _step(step, policy, static, inputs, c), carry)


def shrink(carry: Carry, slots: int) -> Carry:
    """The carry of ``slots`` env slots: the busy slots first (the queue is empty, so the
    others stay idle)."""
    order = jnp.argsort(carry.queue.slot_pair < 0, stable=True)[:slots]
    fields = carry._asdict()
    for name in BATCHED:
        fields[name] = jax.tree_util.tree_map(lambda x: x[order], fields[name])
    queue = carry.queue
    fields["queue"] = queue._replace(slot_pair=queue.slot_pair[order], dead=queue.dead[order])
    return Carry(**fields)


def _step(step: Any, policy: ArrayPolicy, static: Static, inputs: Inputs, c: Carry) -> Carry:
    """One vector step: what ``rollout._run_steps`` does per step, on arrays."""
    pairs, ops = static.pairs, jax_ops()
    policy_state = _zero_rows(c.policy_state, c.just_reset)
    obs = c.env.obs
    finite = jnp.isfinite(obs).all(axis=1)
    obs = jnp.where(finite[:, None], obs, 0.0)
    queue, counts = schedule.observe(ops, inputs.pair_solution, static.following, c.queue,
                                     c.done, finite)
    statistics = {}
    if static.collect:
        centered = jnp.where(counts[:, None], obs - inputs.center, 0.0)
        total, error = kahan(c.obs_sum, c.obs_sum_error, centered)
        squares, squares_error = kahan(c.obs_squares, c.obs_squares_error, centered * centered)
        statistics = {"obs_sum": total, "obs_sum_error": error, "obs_squares": squares,
                      "obs_squares_error": squares_error, "obs_count": c.obs_count + counts}
    x = obs * inputs.scale + inputs.shift if static.normalize else obs
    actions, policy_state = policy(ops, policy.rows(c.slot_params), x, policy_state)
    inside = jnp.minimum(jnp.maximum(queue.slot_pair, 0), pairs - 1)
    if static.noisy:  # the pair's key and its step: the same noise on any slot or device
        keys = jax.vmap(jax.random.fold_in)(inputs.noise_keys[inside], c.lengths[inside])
        drawn = jax.vmap(lambda k: jax.random.normal(k, actions.shape[1:], actions.dtype))(keys)
        actions = actions + inputs.stdev * drawn
    env, done, _ = step(c.env, actions, c.done, c.slot_keys)  # taken pairs set the keys
    index = jnp.where(counts, queue.slot_pair, pairs)  # not counted: out of range, dropped
    inside = jnp.minimum(index, pairs - 1)
    total, error = kahan(c.returns[inside], c.returns_error[inside], env.reward)
    ends = done & counts
    queue, slot_params, slot_keys = jax.lax.cond(
        ends.any(), lambda a: _take_next(static, inputs, ends, *a), lambda a: a,
        (queue, c.slot_params, c.slot_keys))
    return c._replace(
        env=env, slot_keys=slot_keys, done=done, just_reset=c.done, queue=queue,
        slot_params=slot_params, policy_state=policy_state,
        returns=c.returns.at[index].set(total, mode="drop"),
        returns_error=c.returns_error.at[index].set(error, mode="drop"),
        lengths=c.lengths.at[index].add(1, mode="drop"), steps=c.steps + 1, **statistics)


def _zero_rows(state: tuple, mask: Any) -> tuple:
    return tuple(jnp.where(mask[:, None], 0.0, s) for s in state)


def _take_next(static: Static, inputs: Inputs, ends: Any, queue: Queue, slot_params: Any,
               slot_keys: Any) -> tuple:
    """The ending slots take their next pairs (``schedule.end``); the slots that took one get
    its solution's parameters and its reset key (their recurrent state is zeroed after the
    autoreset step, as every slot's is)."""
    queue, taken = schedule.end(jax_ops(), inputs.pair_solution, static.following, queue, ends)
    pair = jnp.maximum(queue.slot_pair, 0)
    slot_params = jnp.where(taken[:, None], inputs.params[inputs.pair_solution[pair]],
                            slot_params)
    slot_keys = jnp.where(taken[:, None], inputs.pair_keys[pair], slot_keys)
    return queue, slot_params, slot_keys
