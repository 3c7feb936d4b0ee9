"""The traced part of the compiled evaluation: one device's phase of a rollout as a jax loop.

Each device runs its own share of the (solution, episode) pairs (``pairs.split_pairs``)
as a queue over its own env slots; the tables of its pairs (their solution, their reset key,
their action-noise key) are its inputs, so a pair's episode does not depend on the device that
runs it. A phase steps the device's slots until every pair has run, or, when ``limit >= 0``,
until its queue is empty and at most ``limit`` slots are still busy (the host then moves those
slots into the next phase's smaller batch: see :mod:`neurorun.problems.jax.rollout`).

The slots are stepped in chunks of ``ProgramShape.chunk`` envs, one call of the env's step each,
and only the chunks that hold a busy slot are stepped: once the queue is empty, the busy slots
move to the first chunks (a stable reordering, ``_compact``), so a step costs in proportion to
the busy slots, not to the batch, within one compiled program. A rollout's first step resets
every slot (its carry starts with every slot's env pending a reset, ``first_carry``), so no
program of its own makes the first env states.

Each later step does what ``rollout.run_steps`` does per step, on arrays: recurrent state
reset, non-finite observations retire their slot's solution, observation statistics from
counted steps, the policy on normalized observations, action noise, the env step with
next-step autoreset, per-pair returns and lengths, the end of episodes that reached the
curriculum's cut (``Inputs.cut``), and the next pending pairs for slots whose episode ended.
The queue's rules (which pair a slot runs, which steps count, what a non-finite observation
retires) are :mod:`neurorun.problems.schedule`'s, the host loop's own, on jax arrays.
Nothing here communicates across devices: each device's loop ends on its own.
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
class ProgramShape:
    """What one compiled program is specialized to (jit's static arguments): one device's
    sizes and which optional steps it includes."""

    slots: int  # the env slots of this phase: a whole number of chunks
    chunk: int  # envs stepped by one call of the env's step
    solutions: int  # n: parameter rows (row n: no solution, of padding pairs)
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
    cut: Any  # () int32: episodes end after this many counted steps (the curriculum's)


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
    steps: Any  # () int32 vector steps of this phase (-1 before the rollout's reset step)
    simulated: Any  # () int32 env steps simulated in this phase (stepped chunks x chunk)


BATCHED = ("env", "slot_keys", "done", "just_reset", "slot_params", "policy_state", "obs_sum",
           "obs_sum_error", "obs_squares", "obs_squares_error", "obs_count")


def kahan(total: Any, error: Any, value: Any) -> tuple[Any, Any]:
    """``total + value`` with the rounding error carried in ``error`` (compensated sum)."""
    y = value - error
    t = total + y
    return t, (t - total) - y


def first_carry(env: Any, policy: ArrayPolicy, shape: ProgramShape, inputs: Inputs,
                usable: Any) -> Carry:
    """A device's carry before its rollout: slot b takes pair b (none past the pairs, past
    ``usable`` slots, on a padding pair or, lock-step, past the device's solutions), and every
    slot's env pends a reset from its pair's key, so the rollout's first step makes the first
    env states (its env state is zeros until then: no physics runs here)."""
    slots, pairs = shape.slots, shape.pairs
    queue = schedule.start(jax_ops(), inputs.pair_solution, shape.solutions, slots,
                           shape.following, usable)
    index = jnp.minimum(jnp.arange(slots), pairs - 1)
    slot_keys = inputs.pair_keys[index]
    shapes = jax.eval_shape(env.reset, slot_keys)
    state = jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)
    return Carry(
        env=state, slot_keys=slot_keys, done=jnp.ones(slots, bool),
        just_reset=jnp.zeros(slots, bool), queue=queue,
        slot_params=inputs.params[inputs.pair_solution[index]],
        policy_state=policy.zero_state(jax_ops(), slots, jnp.float32),
        returns=jnp.zeros(pairs, jnp.float32), returns_error=jnp.zeros(pairs, jnp.float32),
        lengths=jnp.zeros(pairs, jnp.int32),
        **_zero_statistics(jnp, slots, state.obs.shape[1]), steps=jnp.int32(-1),
        simulated=jnp.int32(0))


def _zero_statistics(xp: Any, slots: int, size: int) -> dict[str, Any]:
    zeros = xp.zeros((slots, size), xp.float32)
    return {"obs_sum": zeros, "obs_sum_error": zeros, "obs_squares": zeros,
            "obs_squares_error": zeros, "obs_count": xp.zeros(slots, xp.int32)}


def phase(env: Any, policy: ArrayPolicy, shape: ProgramShape, inputs: Inputs, carry: Carry,
          limit: Any) -> Carry:
    """Steps until no slot is busy, or (``limit >= 0``) the queue is empty and at most
    ``limit`` slots are busy; the phase's step counts and statistics start from zero."""
    step = next_step_autoreset(env)

    def going(c: Carry) -> Any:
        queue = c.queue
        busy = jnp.count_nonzero(queue.slot_pair >= 0)
        # an open pair waits (not padding, nor of a failed solution)
        pending = shape.streaming and (queue.open_before[-1] > queue.open_before[
            queue.next_pair])
        return (busy > 0) & ((limit < 0) | pending | (busy > limit))

    carry = carry._replace(steps=jnp.minimum(carry.steps, 0), simulated=jnp.int32(0),
                           **_zero_statistics(jnp, *carry.obs_sum.shape))
    return jax.lax.while_loop(going, lambda c: _step(step, policy, shape, inputs, c), carry)


def hand_over(inputs: Inputs, carry: Carry, shape: ProgramShape,
              drain: ProgramShape) -> tuple[Inputs, Carry, Any]:
    """The queue program's last busy slots (at most ``drain.slots``; no pair waits) as the
    drain program's inputs and carry: drain slot k runs the k-th busy slot's pair on, as the
    drain's own solution k, with its return, length and action-noise key so far. Returns
    those and ``origin`` (drain.slots,), the pair each drain slot runs (-1: none)."""
    c = _reordered(carry, jnp.argsort(carry.queue.slot_pair < 0, stable=True)[:drain.slots])
    pair = c.queue.slot_pair
    busy = pair >= 0
    pair_of_slot = jnp.maximum(pair, 0)
    slot_solution = jnp.where(busy, jnp.arange(drain.slots), drain.solutions).astype(
        inputs.pair_solution.dtype)
    queue = schedule.start(jax_ops(), slot_solution, drain.solutions, drain.slots, 0)
    zeros = jnp.zeros((1, c.slot_params.shape[1]), c.slot_params.dtype)
    drained = inputs._replace(params=jnp.concatenate([c.slot_params, zeros]),
                              pair_solution=slot_solution, pair_keys=c.slot_keys,
                              noise_keys=inputs.noise_keys[pair_of_slot])
    c = c._replace(queue=queue._replace(dead=c.queue.dead),
                   returns=jnp.where(busy, c.returns[pair_of_slot], 0.0),
                   returns_error=jnp.where(busy, c.returns_error[pair_of_slot], 0.0),
                   lengths=jnp.where(busy, c.lengths[pair_of_slot], 0))
    return drained, c, jnp.where(busy, pair, -1)


def _reordered(carry: Carry, order: Any) -> Carry:
    """``carry`` with its slots taken in ``order``."""
    fields = carry._asdict()
    for name in BATCHED:
        fields[name] = jax.tree_util.tree_map(lambda x: x[order], fields[name])
    queue = carry.queue
    fields["queue"] = queue._replace(slot_pair=queue.slot_pair[order], dead=queue.dead[order])
    return Carry(**fields)


def _chunks_in_use(shape: ProgramShape, slot_pair: Any) -> tuple[Any, Any]:
    """(chunks holding a busy slot from the first to the last, fewest chunks the busy slots
    need)."""
    busy = slot_pair >= 0
    last = jnp.max(jnp.where(busy, jnp.arange(shape.slots), -1))
    chunk = shape.chunk
    return (last + chunk) // chunk, (jnp.count_nonzero(busy) + chunk - 1) // chunk


def _compact(shape: ProgramShape, c: Carry) -> Carry:
    """Busy slots into the first chunks when they would fill fewer chunks than they span
    (idle ones stay idle: a slot goes idle only once the queue is empty, or retires)."""
    if shape.slots == shape.chunk:
        return c
    spanned, needed = _chunks_in_use(shape, c.queue.slot_pair)
    return jax.lax.cond(
        needed < spanned,
        lambda c: _reordered(c, jnp.argsort(c.queue.slot_pair < 0, stable=True)),
        lambda c: c, c)


def _step(step: Any, policy: ArrayPolicy, shape: ProgramShape, inputs: Inputs, c: Carry) -> Carry:
    """One vector step: what ``rollout.run_steps`` does per step, on arrays, the policy and
    the env step chunk by chunk."""
    c = _compact(shape, c)
    pairs, ops = shape.pairs, jax_ops()
    policy_state = _zero_rows(c.policy_state, c.just_reset)
    obs = c.env.obs
    finite = jnp.isfinite(obs).all(axis=1)
    obs = jnp.where(finite[:, None], obs, 0.0)
    queue, counts = schedule.observe(ops, inputs.pair_solution, shape.following, c.queue,
                                     c.done, finite)
    statistics = {}
    if shape.collect:
        centered = jnp.where(counts[:, None], obs - inputs.center, 0.0)
        total, error = kahan(c.obs_sum, c.obs_sum_error, centered)
        squares, squares_error = kahan(c.obs_squares, c.obs_squares_error, centered * centered)
        statistics = {"obs_sum": total, "obs_sum_error": error, "obs_squares": squares,
                      "obs_squares_error": squares_error, "obs_count": c.obs_count + counts}
    pair_of_slot = jnp.minimum(jnp.maximum(queue.slot_pair, 0), pairs - 1)
    chunks, _ = _chunks_in_use(shape, queue.slot_pair)
    moved = jax.lax.fori_loop(0, chunks, lambda k, m: _chunk_step(
        step, policy, shape, inputs, c, obs, pair_of_slot, k, m),
        (c.env, c.slot_keys, c.done, policy_state, jnp.zeros(shape.slots, jnp.float32)))
    env, slot_keys, done, policy_state, reward = moved
    index = jnp.where(counts, queue.slot_pair, pairs)  # not counted: out of range, dropped
    pair_of_slot = jnp.minimum(index, pairs - 1)
    total, error = kahan(c.returns[pair_of_slot], c.returns_error[pair_of_slot], reward)
    # an episode that reached the cut ends as if the env had ended it: its slot resets next
    done = done | (counts & (c.lengths[pair_of_slot] + 1 >= inputs.cut))
    ends = done & counts
    queue, slot_params, slot_keys = jax.lax.cond(
        ends.any(), lambda a: _take_next(shape, inputs, ends, *a), lambda a: a,
        (queue, c.slot_params, slot_keys))
    counting = c.steps >= 0  # the rollout's first step only resets
    return c._replace(
        env=env, slot_keys=slot_keys, done=done, just_reset=c.done, queue=queue,
        slot_params=slot_params, policy_state=policy_state,
        returns=c.returns.at[index].set(total, mode="drop"),
        returns_error=c.returns_error.at[index].set(error, mode="drop"),
        lengths=c.lengths.at[index].add(1, mode="drop"), steps=c.steps + 1,
        simulated=c.simulated + jnp.where(counting, chunks * shape.chunk, 0), **statistics)


def _chunk_step(step: Any, policy: ArrayPolicy, shape: ProgramShape, inputs: Inputs, c: Carry,
                obs: Any, pair_of_slot: Any, k: Any, moved: tuple) -> tuple:
    """Chunk ``k``'s slots act and step: their policy rows on their (normalized)
    observations, action noise, the env step with next-step autoreset."""
    env, slot_keys, done, policy_state, reward = moved
    first, size, ops = k * shape.chunk, shape.chunk, jax_ops()

    def take(x: Any) -> Any:
        return jax.lax.dynamic_slice_in_dim(x, first, size)

    def put(x: Any, part: Any) -> Any:
        return jax.lax.dynamic_update_slice_in_dim(x, part.astype(x.dtype), first, 0)

    x = take(obs)
    if shape.normalize:
        x = x * inputs.scale + inputs.shift
    actions, state = policy(ops, policy.rows(take(c.slot_params)), x,
                            tuple(take(s) for s in policy_state))
    if shape.noisy:  # the pair's key and its step: the same noise on any slot or device
        pair = take(pair_of_slot)
        keys = jax.vmap(jax.random.fold_in)(inputs.noise_keys[pair], c.lengths[pair])
        drawn = jax.vmap(lambda k: jax.random.normal(k, actions.shape[1:], actions.dtype))(keys)
        actions = actions + inputs.stdev * drawn
    stepped, ended, keys = step(jax.tree_util.tree_map(take, env), actions, take(c.done),
                                take(slot_keys))  # taken pairs set the keys
    return (jax.tree_util.tree_map(put, env, stepped), put(slot_keys, keys), put(done, ended),
            tuple(put(s, part) for s, part in zip(policy_state, state, strict=True)),
            put(reward, stepped.reward))


def _zero_rows(state: tuple, mask: Any) -> tuple:
    return tuple(jnp.where(mask[:, None], 0.0, s) for s in state)


def _take_next(shape: ProgramShape, inputs: Inputs, ends: Any, queue: Queue, slot_params: Any,
               slot_keys: Any) -> tuple:
    """The ending slots take their next pairs (``schedule.end``); the slots that took one get
    its solution's parameters and its reset key (their recurrent state is zeroed after the
    autoreset step, as every slot's is)."""
    queue, taken = schedule.end(jax_ops(), inputs.pair_solution, shape.following, queue, ends)
    pair = jnp.maximum(queue.slot_pair, 0)
    slot_params = jnp.where(taken[:, None], inputs.params[inputs.pair_solution[pair]],
                            slot_params)
    slot_keys = jnp.where(taken[:, None], inputs.pair_keys[pair], slot_keys)
    return queue, slot_params, slot_keys
