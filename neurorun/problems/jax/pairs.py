"""How a compiled rollout's (solution, episode) pairs lie on the devices and their slots, and
how per-pair results move between the host and the programs (:mod:`.rollout` runs them).

``split_pairs`` shares the pairs out (``PairSplit``: streaming or lock-step), ``PairSplit.tables``
gives each pair its solution, reset key and action-noise key, and ``PairSplit.gather`` turns the
per-device results back into per-pair arrays in pair order; ``merge_drained`` puts the drain
program's results into the queue program's; ``PhaseSums`` adds up the phases' step counts
and observation sums.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import Tensor

from neurorun.envs.jax_env import episode_keys
from neurorun.problems.running_norm import NormRecord, RunningNorm
from neurorun.problems.schedule import pair_seeds

# jax and jax_program are imported in the functions that use them: this module loads without
# jax


class SharedInputs(NamedTuple):
    """What every pair of a rollout reads alike (the tail of ``jax_program.Inputs``)."""

    center: np.ndarray  # (O,)
    scale: np.ndarray  # (O,)
    shift: np.ndarray  # (O,)
    stdev: np.floating  # ()
    cut: np.integer  # () int32


class PairTables(NamedTuple):
    """Each device's own pairs: (devices, T, ...) arrays, a device's row its share."""

    pair_solution: Any  # (devices, T) int32, n for padding
    pair_keys: Any  # (devices, T, 2) uint32 reset keys
    noise_keys: Any  # (devices, T, 2) uint32 action-noise keys


def stacked_inputs(params: Any, pair_solution: Any, pair_keys: Any, noise_keys: Any,
                    center: Any, scale: Any, shift: Any, stdev: Any, cut: Any) -> Any:
    """``jax_program.Inputs`` of every device, stacked on a leading device axis."""
    from neurorun.problems.jax import program as jax_program

    return jax_program.Inputs(np.ascontiguousarray(params), pair_solution, pair_keys,
                              noise_keys, np.ascontiguousarray(center),
                              np.ascontiguousarray(scale), np.ascontiguousarray(shift),
                              np.ascontiguousarray(stdev), np.ascontiguousarray(cut))


@dataclass(frozen=True)
class PairSplit:
    """How the pairs of ``n`` solutions x ``episodes`` are shared by the devices.

    Streaming: pair k (episode-major, ``k = e * n + j``) goes to device ``k % devices``, so
    each device's share is as even as the count allows, and each device runs its share as a
    queue. Lock-step: solution j goes to device ``j // m`` (``m = ceil(n / devices)``) with
    all its episodes; each of the device's slots runs one solution's episodes in turn.
    ``pair_index[d, t]`` is the pair of device d's t-th pair (-1: padding).
    """

    n: int
    episodes: int
    pair_index: np.ndarray  # (devices, T) int64
    following: int  # lock-step: m (a slot's next pair is its pair + m); 0: streaming

    @property
    def pairs(self) -> int:
        return self.pair_index.shape[1]

    @property
    def streaming(self) -> bool:
        return self.following == 0

    def counts(self) -> list[int]:
        return (self.pair_index >= 0).sum(1).tolist()

    def slots(self, total: int) -> int:
        """Env slots per device for ``total`` slots in all."""
        if self.following:
            return self.following
        devices = self.pair_index.shape[0]
        return max(1, min(-(-min(total, self.n * self.episodes) // devices), self.pairs))

    def tables(self, seed: int, noise_seed: int) -> PairTables:
        """Each pair's solution, reset key (its episode seed's: ``schedule.pair_seeds``) and
        action-noise key, per device."""
        import jax

        valid = self.pair_index >= 0
        index = np.where(valid, self.pair_index, 0)
        seeds = pair_seeds(int(seed), index, self.n)
        keys = episode_keys(seeds).reshape(*seeds.shape, 2)
        noise = jax.vmap(jax.random.fold_in, in_axes=(None, 0))(
            jax.random.PRNGKey(int(noise_seed)), (seeds & 0xFFFFFFFF).astype(np.uint32).ravel())
        return PairTables(np.where(valid, index % self.n, self.n).astype(np.int32), keys,
                      np.asarray(noise).reshape(*seeds.shape, 2))

    def gather(self, out: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Per-device results (devices, T) as per-pair arrays (n * episodes,) in pair order,
        and ``failed`` (devices, n + 1) as (n,)."""
        valid = self.pair_index >= 0
        gathered = {}
        for name in ("returns", "lengths", "finished"):
            values = np.zeros(self.n * self.episodes, out[name].dtype)
            values[self.pair_index[valid]] = out[name][valid]
            gathered[name] = values
        gathered["failed"] = out["failed"][:, :self.n].any(0)
        return gathered


def split_pairs(n: int, episodes: int, devices: int, streaming: bool) -> PairSplit:
    """The pairs of each device (see PairSplit)."""
    total = n * episodes
    if streaming:
        per = -(-total // devices)
        index = np.arange(per * devices).reshape(per, devices).T
        return PairSplit(n, episodes, np.where(index < total, index, -1), 0)
    m = -(-n // devices)
    solution = np.arange(devices)[:, None] * m + np.arange(m)[None, :]  # (devices, m)
    index = np.arange(episodes)[None, :, None] * n + solution[:, None, :]  # (devices, E, m)
    index = np.where(solution[:, None, :] < n, index, -1).reshape(devices, episodes * m)
    return PairSplit(n, episodes, index, m)


def padded(params: Tensor) -> np.ndarray:
    """``(n + 1, D)`` float32: the parameters and the zero row of padding pairs."""
    rows = params.detach().to("cpu", torch.float32).numpy()
    return np.concatenate([rows, np.zeros((1, rows.shape[1]), np.float32)])


def padded_to(table: np.ndarray, width: int, fill: Any) -> np.ndarray:
    """``table (devices, T, ...)`` as (devices, width, ...), filled with ``fill`` past T."""
    out = np.full((table.shape[0], width, *table.shape[2:]), fill, table.dtype)
    out[:, :table.shape[1]] = table
    return out


def pair_arrays(carry: Any) -> dict[str, np.ndarray]:
    """A phase's per-device pair results on the host: (devices, T) arrays and ``failed``
    (devices, n + 1)."""
    import jax

    out = jax.device_get({"returns": carry.returns, "lengths": carry.lengths,
                          "finished": carry.queue.finished, "failed": carry.queue.failed})
    return {name: np.array(value) for name, value in out.items()}  # writable: merged into


def merge_drained(out: dict[str, np.ndarray], drained: dict[str, np.ndarray], origin: np.ndarray,
           pair_solution: np.ndarray) -> None:
    """The drain's results into the queue program's: drain slot k of device d ran pair
    ``origin[d, k]`` (-1: none) of that device, as the drain's solution k."""
    for d in range(origin.shape[0]):
        ran = origin[d] >= 0
        pairs = origin[d][ran]
        for name in ("returns", "lengths", "finished"):
            out[name][d, pairs] = drained[name][d, :len(ran)][ran]
        out["failed"][d, pair_solution[d][pairs[drained["failed"][d, :len(ran)][ran]]]] = True


class PhaseSums:
    """Step counts and observation sums over the phases of one rollout (float64, host)."""

    def __init__(self, size: int):
        self.steps = self.simulated = 0
        self.count = 0.0
        self.shifted = np.zeros(size)
        self.squares = np.zeros(size)

    def add(self, carry: Any) -> None:
        import jax

        steps, simulated, count, shifted, squares = jax.device_get(
            (carry.steps, carry.simulated, carry.obs_count.sum(), carry.obs_sum,
             carry.obs_squares))
        self.steps += int(np.asarray(steps).max())  # each device's vector steps, side by side
        self.simulated += int(np.asarray(simulated).sum())
        self.count += float(count)
        self.shifted += np.asarray(shifted, np.float64).sum((0, 1))
        self.squares += np.asarray(squares, np.float64).sum((0, 1))

    def statistics(self, center: np.ndarray, like: RunningNorm) -> RunningNorm:
        """The observation statistics of the sums of ``obs - center``."""
        center = center.astype(np.float64)
        count, shifted = self.count, self.shifted
        return RunningNorm.from_state_dict(NormRecord(
            size=like.size, min_variance=like.min_variance, count=torch.tensor(count),
            sum=torch.from_numpy(shifted + count * center),
            sum_of_squares=torch.from_numpy(self.squares + 2 * center * shifted
                                            + count * center * center)))
