"""``StatsBuffer``: the host loop's counted observations, added to the observation
statistics (a ``RunningNorm``) a chunk of ``STATS_FLUSH_SIZE`` numbers at a time."""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

from neurorun.problems.running_norm import RunningNorm

# observations are added to the statistics in chunks of about this many numbers: one update
# costs a few hundred microseconds, so small observations are gathered over many steps
STATS_FLUSH_SIZE = 1 << 20

Array = Tensor | np.ndarray  # per-env data: numpy arrays on the host path, else tensors


class StatsBuffer:
    """Gathers the counted observations of ``steps_per_flush`` steps, then adds them to a
    RunningNorm in one update. On the host each step's rows are copied into one float64
    buffer of a chunk's size, which the update then squares in place (no gathering of the
    chunk's arrays); elsewhere the (obs, mask) pairs are kept and selected at the flush."""

    def __init__(self, stats: RunningNorm | None):
        self.stats = stats
        self.steps = 0  # since the last flush
        self.steps_per_flush = 0  # set at the first add, from the size of the observations
        self.rows: np.ndarray | None = None  # host: (steps_per_flush * slots, obs) float64
        self.filled = 0  # rows of ``rows`` in use
        self.obs: list[Tensor] = []
        self.masks: list[np.ndarray] = []

    def add(self, obs: Array, mask: np.ndarray) -> None:
        if self.stats is None:
            return
        if not self.steps_per_flush:
            self.steps_per_flush = max(1, STATS_FLUSH_SIZE // math.prod(obs.shape))
            if isinstance(obs, np.ndarray):
                self.rows = np.empty((self.steps_per_flush * obs.shape[0], obs.shape[1]))
        if self.rows is None:
            self.obs.append(obs)
            self.masks.append(mask)
        else:
            count = np.count_nonzero(mask)
            self.rows[self.filled:self.filled + count] = obs if count == len(mask) else obs[mask]
            self.filled += count
        self.steps += 1
        if self.steps >= self.steps_per_flush:
            self.flush()

    def flush(self) -> None:
        if self.stats is None or not self.steps:
            return
        if self.rows is None:
            self.stats.update(torch.cat(self.obs), torch.from_numpy(np.concatenate(self.masks)))
            self.obs.clear()
            self.masks.clear()
        else:
            self.stats.update(torch.from_numpy(self.rows[:self.filled]), scratch=True)
            self.filled = 0
        self.steps = 0
