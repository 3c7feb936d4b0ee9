"""The work queue of a rollout: which (solution, episode) pair each env slot runs.

Pairs are numbered episode-major, ``k = e * n + j`` for solution ``j < n`` and episode
``e < num_episodes``, so the first slots start the solutions' first episodes. When a slot's
episode ends, the slot takes the next pending pair (``streaming``) or the next episode of its
own solution (lock-step). Which pair a slot takes depends only on the order in which episodes
end, step by step, never on wall-clock timing, so results are the same for the same seed.

The rules are written once, as pure functions of arrays in the API that numpy and jax.numpy
share (``Ops``, as :mod:`neurorun.nets.arrays` does for the layers): the step-by-step host
loop (:mod:`neurorun.problems.rollout`, through :class:`Schedule`) and the jitted loop of
each device (:mod:`neurorun.problems.jax.program`) both run them. A queue's pairs are given
by a table of their solutions (``pair_solution``), so a device's share of the pairs is a
queue of its own; solution ``n`` marks a padding pair (no solution: never run).

Seeds (``pair_seeds``), where the backend can seed each episode: first episodes follow
gymnasium's ``seed + i`` rule, later ones are a stride apart. A rollout of
solutions ``first..`` of a population is given ``seed = base + first``, so a solution's seeds
do not depend on how a population is split (ray sub-batches). This holds on the backends that
seed every episode (gymnasium's SyncVectorEnv, brax, Playground), whatever the slots, the
devices and the order in which episodes end. Elsewhere a slot is seeded with its first
episode's seed and its later episodes continue the slot's generator (EnvPool: a new pool per
call; native gymnasium vector envs: one generator for all slots, seeded with the first slot's).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from neurorun.nets.arrays import Ops, numpy_ops

EPISODE_SEED_STRIDE = 1 << 20  # seed offset between a solution's episodes (> any popsize)

Array = Any  # a numpy or jax array


def pair_seeds(seed: int, pairs: Array, num_solutions: int) -> Array:
    """The episode seed of each of ``pairs`` (numbered episode-major) of a rollout seeded
    ``seed``: pair ``(j, e)`` gets ``seed + j + e * EPISODE_SEED_STRIDE``."""
    solution, episode = pairs % num_solutions, pairs // num_solutions
    return seed + solution + episode * EPISODE_SEED_STRIDE


class Queue(NamedTuple):
    """The queue's state over B env slots, T pairs and n solutions."""

    slot_pair: Array  # (B,) the pair each slot runs (-1: none)
    next_pair: Array  # () the next pending pair (streaming)
    dead: Array  # (B,) slots retired after a non-finite observation (or beyond ``usable``)
    finished: Array  # (T,) pairs whose episode ended
    failed: Array  # (n + 1,) solutions that met a non-finite observation; row n: padding
    open_before: Array  # (T + 1,) how many pairs before pair t belong to a solution not failed


def start(ops: Ops, pair_solution: Array, solutions: int, slots: int, following: int,
          usable: int | None = None) -> Queue:
    """Slot b takes pair b, for the first ``usable`` slots (None: all) and, lock-step, at most
    one slot per solution (``following`` solutions); padding pairs are not taken.

    Args:
        pair_solution: (T,) the solution of each pair (``solutions``: padding).
        following: lock-step, a slot's next pair is its pair + ``following``; 0: streaming.
    """
    xp = ops.xp
    pairs = pair_solution.shape[0]
    usable = slots if usable is None else min(int(usable), slots)
    first = min(usable, following or pairs)
    slot = xp.arange(slots)
    solution = pair_solution[xp.minimum(slot, pairs - 1)]
    slot_pair = xp.where((slot < first) & (solution < solutions), slot, -1)
    failed = xp.arange(solutions + 1) == solutions
    return Queue(slot_pair=slot_pair, next_pair=xp.asarray(first, slot_pair.dtype),
                 dead=slot >= usable, finished=xp.zeros(pairs, bool), failed=failed,
                 open_before=_open_before(xp, failed, pair_solution))


def counted(queue: Queue, done: Array) -> Array:
    """(B,) the slots whose step is an interaction of a pair's episode: busy, and not the
    next-step autoreset after ``done`` (which starts the slot's next episode)."""
    return (queue.slot_pair >= 0) & ~done


def observe(ops: Ops, pair_solution: Array, following: int, queue: Queue, done: Array,
            finite: Array | None) -> tuple[Queue, Array]:
    """A step's bookkeeping before the env steps, given which slots' observations are
    ``finite`` ((B,) bool; None: all of them, which the host loop checks in one reduction; the
    host loop also marks a Discrete env's slot whose choice scores hold a NaN): the slots
    whose step counts (``counted``, with a finite observation). A counted slot whose
    observation is not finite fails its solution (``fail``); a not counted one (the terminal
    observation of an ended episode, which the autoreset step replaces) fails nothing.
    Returns the queue and the (B,) counted slots."""
    counts = counted(queue, done)
    if finite is None:
        return queue, counts
    failing = counts & ~finite
    queue = ops.cond(failing.any(),
                     lambda q: fail(ops, pair_solution, following, q, failing), lambda q: q,
                     queue)
    return queue, counts & finite


def fail(ops: Ops, pair_solution: Array, following: int, queue: Queue, failing: Array) -> Queue:
    """The ``failing`` slots (B,) met a non-finite observation: their solutions fail (their
    other pairs are not run) and the slots retire. Streaming, once no slot is left, every
    pending pair's solution fails too."""
    xp = ops.xp
    solution = pair_solution[xp.maximum(queue.slot_pair, 0)]
    failed = _set(ops, queue.failed, solution, failing)
    dead = queue.dead | failing
    next_pair = queue.next_pair
    if not following:
        pairs = pair_solution.shape[0]
        all_dead = dead.all()
        failed = _set(ops, failed, pair_solution, all_dead & (xp.arange(pairs) >= next_pair))
        next_pair = xp.where(all_dead, pairs, next_pair).astype(next_pair.dtype)
    return queue._replace(slot_pair=xp.where(failing, -1, queue.slot_pair), next_pair=next_pair,
                          dead=dead, failed=failed,
                          open_before=_open_before(xp, failed, pair_solution))


def end(ops: Ops, pair_solution: Array, following: int, queue: Queue,
        ends: Array) -> tuple[Queue, Array]:
    """The episodes of the ``ends`` slots (B,) ended: their pairs are finished and the slots
    take their next pairs, in slot order (streaming: the k-th ending slot takes the k-th
    pending pair whose solution has not failed; lock-step: its solution's next episode).

    Returns the queue and the (B,) slots that took a pair (none where none ends)."""
    xp = ops.xp
    pairs = pair_solution.shape[0]
    finished = _set(ops, queue.finished, queue.slot_pair, ends)
    next_pair = queue.next_pair
    if following:
        new = queue.slot_pair + following
    else:  # the rank-th pending pair whose solution has not failed (none: past the last)
        open_before = queue.open_before
        rank = xp.add.accumulate(ends.astype(open_before.dtype))
        new = xp.searchsorted(open_before, open_before[next_pair] + rank) - 1
        # after the last ending slot's pair (the last slot's rank counts every ending one)
        next_pair = xp.where(rank[-1] > 0, xp.minimum(new[-1] + 1, pairs), next_pair)
    slot_pair = xp.where(ends, xp.where(new < pairs, new, -1), queue.slot_pair)
    queue = queue._replace(slot_pair=slot_pair, next_pair=next_pair, finished=finished)
    return queue, ends & (slot_pair >= 0)


def _open_before(xp: Any, failed: Array, pair_solution: Array) -> Array:
    """(T + 1,) how many of the pairs before each pair (and before none: 0) are open."""
    open_pairs = (~failed[pair_solution]).astype(pair_solution.dtype)
    return xp.concatenate([xp.zeros(1, open_pairs.dtype), xp.add.accumulate(open_pairs)])


def _set(ops: Ops, flags: Array, index: Array, where: Array) -> Array:
    """``flags`` with ``flags[index[where]]`` set (a new array)."""
    if ops.name == "jax":
        return flags.at[ops.xp.where(where, index, flags.shape[0])].set(True, mode="drop")
    flags = flags.copy()
    flags[index[where]] = True
    return flags


class Schedule:
    """The host loop's queue: the rules above on numpy arrays, over the first ``usable`` of
    ``num_slots`` env slots (None: all), with each pair's episode seed.

    Attributes:
        slot_pair: (num_slots,) int64, the pair each slot runs (-1: none).
        finished: (n * num_episodes,) bool, pairs whose episode ended.
        failed: (n,) bool, solutions that met a non-finite observation (their pairs stop).
    """

    def __init__(self, num_solutions: int, num_episodes: int, num_slots: int, *,
                 streaming: bool, seed: int, usable: int | None = None):
        self.n, self.num_episodes, self.seed = num_solutions, num_episodes, int(seed)
        self.total = num_solutions * num_episodes
        usable = num_slots if usable is None else min(int(usable), num_slots)
        if not streaming and usable < num_solutions:
            raise ValueError(f"lock-step rollout of {num_solutions} solutions needs as many "
                             f"env slots; got {usable}")
        self.following = 0 if streaming else num_solutions
        self.pair_solution = np.arange(self.total) % num_solutions
        self.queue = start(numpy_ops(), self.pair_solution, num_solutions, num_slots,
                           self.following, usable)

    @property
    def slot_pair(self) -> np.ndarray:
        return self.queue.slot_pair

    @property
    def finished(self) -> np.ndarray:
        return self.queue.finished

    @property
    def failed(self) -> np.ndarray:
        return self.queue.failed[:self.n]

    def pair_seeds(self, pairs: np.ndarray) -> np.ndarray:
        return pair_seeds(self.seed, pairs, self.n)

    def reset_seeds(self) -> list[int]:
        """Seed of each slot's first episode (a slot without a pair: ``seed + slot``)."""
        seeds = self.seed + np.arange(len(self.slot_pair))
        busy = self.slot_pair >= 0
        seeds[busy] = self.pair_seeds(self.slot_pair[busy])
        return seeds.tolist()

    def solutions(self, slots: np.ndarray) -> np.ndarray:
        """The solution each of ``slots`` runs (slots without a pair: solution 0)."""
        return np.maximum(self.slot_pair[slots], 0) % self.n

    def observe(self, done: np.ndarray, finite: np.ndarray | None) -> np.ndarray:
        """The counted slots of this step (see ``observe``); their non-finite ones fail."""
        if finite is None:  # observe's result then, without the call (every host step)
            return counted(self.queue, done)
        self.queue, counts = observe(numpy_ops(), self.pair_solution, self.following,
                                     self.queue, done, finite)
        return counts

    def end(self, ends: np.ndarray) -> np.ndarray:
        """The episodes of the ``ends`` slots (a mask or indices) ended: give them their next
        pairs. Returns the slots that took a new pair."""
        self.queue, taken = end(numpy_ops(), self.pair_solution, self.following, self.queue,
                                self._mask(ends))
        return np.flatnonzero(taken)

    def _mask(self, slots: np.ndarray) -> np.ndarray:
        if slots.dtype == bool:
            return slots
        mask = np.zeros(len(self.slot_pair), bool)
        mask[slots] = True
        return mask
