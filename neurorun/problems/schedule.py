"""The work queue of a streaming rollout: which (solution, episode) pair each env slot runs.

Pairs are numbered episode-major, ``k = e * n + j`` for solution ``j < n`` and episode
``e < num_episodes``, so the first slots start the solutions' first episodes. When a slot's
episode ends, the slot takes the next pending pair (``streaming``) or the next episode of its
own solution (lock-step). Which pair a slot takes depends only on the order in which episodes
end, step by step, never on wall-clock timing, so results are the same for the same seed.

Seeds: pair ``(j, e)`` is seeded ``seed + j + e * EPISODE_SEED_STRIDE`` where the backend can
seed each episode (``seed + j`` for first episodes: gymnasium's ``seed + i`` rule). A rollout of
solutions ``first..`` of a population is given ``seed = base + first``, so a solution's seeds
do not depend on how a population is split (ray sub-batches).
"""

from __future__ import annotations

import numpy as np

EPISODE_SEED_STRIDE = 1 << 20  # seed offset between a solution's episodes (> any popsize)


class Schedule:
    """Assigns pairs to the first ``usable`` of ``num_slots`` env slots (None: all).

    Attributes:
        slot_pair: (num_slots,) int64, the pair each slot runs (-1: none).
        finished: (n * num_episodes,) bool, pairs whose episode ended.
        failed: (n,) bool, solutions that met a non-finite observation (their pairs stop).
    """

    def __init__(self, num_solutions: int, num_episodes: int, num_slots: int, *,
                 streaming: bool, seed: int, usable: int | None = None):
        self.n, self.num_episodes, self.seed = num_solutions, num_episodes, int(seed)
        self.total = num_solutions * num_episodes
        self.streaming = streaming
        usable = num_slots if usable is None else min(int(usable), num_slots)
        if not streaming and usable < num_solutions:
            raise ValueError(f"lock-step rollout of {num_solutions} solutions needs as many "
                             f"env slots; got {usable}")
        first = min(usable, self.total if streaming else num_solutions)
        self.slot_pair = np.full(num_slots, -1, dtype=np.int64)
        self.slot_pair[:first] = np.arange(first)
        self.next = first  # the next pending pair (streaming)
        self.finished = np.zeros(self.total, dtype=bool)
        self.failed = np.zeros(num_solutions, dtype=bool)
        self.dead = np.zeros(num_slots, dtype=bool)  # slots whose env met a non-finite state
        self.dead[usable:] = True  # slots beyond ``usable`` (a larger cached env) stay unused

    def pair_seeds(self, pairs: np.ndarray) -> np.ndarray:
        solution, episode = pairs % self.n, pairs // self.n
        return self.seed + solution + episode * EPISODE_SEED_STRIDE

    def reset_seeds(self) -> list[int]:
        """Seed of each slot's first episode (a slot without a pair: ``seed + slot``)."""
        seeds = self.seed + np.arange(len(self.slot_pair))
        busy = self.slot_pair >= 0
        seeds[busy] = self.pair_seeds(self.slot_pair[busy])
        return seeds.tolist()

    def solutions(self, slots: np.ndarray) -> np.ndarray:
        """The solution each of ``slots`` runs (slots without a pair: solution 0)."""
        return np.maximum(self.slot_pair[slots], 0) % self.n

    def end(self, slots: np.ndarray) -> np.ndarray:
        """The episodes of ``slots`` (indices) ended: give them their next pairs.

        Returns the slots that took a new pair."""
        self.finished[self.slot_pair[slots]] = True
        taken = []
        for slot in slots.tolist():
            pair = self._next_pair(int(self.slot_pair[slot]))
            self.slot_pair[slot] = pair
            if pair >= 0:
                taken.append(slot)
        return np.array(taken, dtype=np.int64)

    def fail(self, slots: np.ndarray) -> None:
        """``slots`` met a non-finite observation: their solutions fail, the slots retire."""
        self.failed[self.slot_pair[slots] % self.n] = True
        self.slot_pair[slots] = -1
        self.dead[slots] = True
        if not self.streaming:
            return
        # a failed solution's pending pairs are not run; with no slot left, nothing more is
        if self.dead.all():
            self.failed[np.unique(np.arange(self.next, self.total) % self.n)] = True
            self.next = self.total

    def _next_pair(self, pair: int) -> int:
        if not self.streaming:  # lock-step: the slot's own solution's next episode
            following = pair + self.n
            return following if following < self.total else -1
        while self.next < self.total:
            candidate = self.next
            self.next += 1
            if not self.failed[candidate % self.n]:
                return candidate
        return -1
