"""The noise of a generation's samples, by sample index, and the weighted sums of it.

Every algorithm samples ``x_i = center + T(eps_i)`` with ``eps_i ~ N(0, I)`` (``T``: the
algorithm's scaling, e.g. ``sigma * eps`` or ``A @ eps``). Row ``i`` of a generation's noise is
a function of two numbers, the generation's draw and ``i``, so any process can make any row:
a distributed run's actors sample their shares on exactly the rows a local run would use, and
a share re-run elsewhere after an actor died gives the same rows. Mirrored sampling uses row
``k`` for samples ``2k`` (``+eps_k``) and ``2k + 1`` (``-eps_k``).

Two sources (``algo.noise_source``):

- ``seeds``: row ``i`` drawn by a generator seeded from (draw, i): no memory, any D.
- ``table``: row ``i`` is a window of D numbers of one table of N(0, 1) numbers made from the
  run's seed, at an offset drawn from (draw, i) (the shared noise table of Salimans et al.
  2017 and Mania et al. 2018): copying a window is cheaper than drawing normals; the table
  takes memory (``algo.noise_table_size`` float32 numbers, ray shares one copy per node).
  Overlapping windows of an i.i.d. table are uncorrelated, as independent rows would be.

The algorithms' one seam between sampling and updating is :func:`weighted_sums`: an update
reads only sums of weighted noise, which add up over any split of the population.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch

from neurorun.algorithms.options import require_count
from neurorun.common.memory import MEMORY_SHARE, device_free_bytes

NOISE_SOURCES = ("seeds", "table")
SUM_KINDS = ("eps", "eps2", "outer")  # sum_i w_i eps_i, sum_i w_i eps_i^2, sum_i w_i eps_i eps_i^T
_MASK = (1 << 63) - 1
SQUARE_NUMBERS = 1 << 18  # weighted_sums squares rows in blocks of about this many numbers
# (1 MB of float32: the block stays in cache, where whole wide shares would not)


def row_seeds(draw: int, rows: np.ndarray) -> np.ndarray:
    """One 63-bit seed per row of generation ``draw`` (SplitMix64's mixer on both numbers;
    arithmetic modulo 2**64)."""
    with np.errstate(over="ignore"):
        z = (np.full(len(rows), int(draw) & _MASK, dtype=np.uint64)
             * np.uint64(0x9E3779B97F4A7C15)
             + np.asarray(rows).astype(np.uint64) * np.uint64(0xBF58476D1CE4E5B9))
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return ((z ^ (z >> np.uint64(31))) & np.uint64(_MASK)).astype(np.int64)


class SeededNoise:
    """Row ``i`` of generation ``draw``: normals from a generator seeded ``row_seeds(draw, i)``."""

    name = "seeds"

    def fill(self, draw: int, rows: np.ndarray, out: torch.Tensor) -> None:
        """Write rows ``rows`` of generation ``draw`` into ``out`` (CPU, one row each)."""
        generator = torch.Generator()
        for index, seed in enumerate(row_seeds(draw, rows).tolist()):
            generator.manual_seed(seed)
            out[index].normal_(generator=generator)


class NoiseTable:
    """Rows are windows of one table of ``size`` standard normals made from ``seed``."""

    name = "table"

    def __init__(self, seed: int, size: int, table: torch.Tensor | None = None):
        self.seed, self.size = int(seed), int(size)
        if table is None:
            generator = torch.Generator().manual_seed(self.seed)
            table = torch.empty(self.size).normal_(generator=generator)
        self.table = table  # (size,) float32

    def fill(self, draw: int, rows: np.ndarray, out: torch.Tensor) -> None:
        """Write rows ``rows`` of generation ``draw`` into ``out`` (CPU, one row each)."""
        dim = out.shape[1]
        if dim > self.size:
            raise ValueError(f"noise_table_size={self.size} is smaller than the solution "
                             f"length {dim}. Fix: algo.noise_table_size >= {64 * dim}")
        offsets = torch.from_numpy(row_seeds(draw, rows) % (self.size - dim + 1))
        windows = self.table.as_strided((self.size - dim + 1, dim), (1, 1))
        out.copy_(windows[offsets])

    def __getstate__(self) -> dict:
        # ray actors get the table through the object store once per node, not with every
        # pickled replica of the algorithm (RayEvaluator attaches it)
        return {"seed": self.seed, "size": self.size, "table": None}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)


def check_noise(source: str, table_size: int | None) -> None:
    """Raise a ValueError for a noise source or table size no solution length can take."""
    require_count("noise_table_size", table_size)  # no table has < 1 number, whatever the source
    if source not in NOISE_SOURCES:
        raise ValueError(f"noise_source={source!r}; expected one of {list(NOISE_SOURCES)}")
    if source == "table" and table_size is not None:
        _check_table_memory(table_size)


def make_noise(source: str, *, seed: int, table_size: int | None, dim: int,
               popsize: int = 1) -> SeededNoise | NoiseTable:
    """The noise source ``algo.noise_source`` names; a table of ``table_size`` numbers
    (None: max(2^24, 64 D)) that holds at least ``popsize`` windows of ``dim`` numbers (with
    fewer, a generation's samples would share their noise: a table of D numbers gives every
    sample the same)."""
    check_noise(source, table_size)
    if source == "seeds":
        return SeededNoise()
    size = max(1 << 24, 64 * dim) if table_size is None else table_size
    if size < dim:
        raise ValueError(f"noise_table_size={table_size!r}; expected an integer >= the "
                         f"solution length {dim}. Fix: null (max(2^24, 64 D)) or more")
    if size - dim + 1 < popsize:
        raise ValueError(f"noise_table_size={size} holds {size - dim + 1} window(s) of "
                         f"the solution length {dim}, fewer than the popsize {popsize}: samples "
                         f"of a generation would share their noise. Fix: "
                         f"algo.noise_table_size >= {dim + popsize - 1}, or null (max(2^24, "
                         f"64 D))")
    if table_size is None:  # a given size was checked above
        _check_table_memory(size)
    return NoiseTable(seed, size)


def _check_table_memory(size: int) -> None:
    """ValueError before a table of ``size`` float32 numbers is made when the memory cannot
    hold it (1e14 failed inside torch mid-run), naming the largest size that fits."""
    free = device_free_bytes(torch.device("cpu"))
    if size * 4 > MEMORY_SHARE * free:
        raise ValueError(
            f"noise_table_size={size}: a table of float32 numbers takes {size * 4 / 1e9:,.1f} "
            f"GB, and this machine has {free / 1e9:.1f} GB free. Fix: algo.noise_table_size="
            f"{int(MEMORY_SHARE * free // 4)} or less (null: max(2^24, 64 D)), or "
            "algo.noise_source=seeds")


def sample_noise(source: SeededNoise | NoiseTable, draw: int, first: int, count: int, dim: int,
                 *, mirrored: bool, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """Noise ``(count, D)`` of samples ``first .. first + count - 1`` of generation ``draw``;
    mirrored (whole pairs only): samples ``2k`` and ``2k + 1`` get ``+`` and ``-`` row ``k``,
    each row drawn once, straight into its place."""
    noise = torch.empty(count, dim, dtype=dtype)
    if not mirrored:
        source.fill(draw, np.arange(first, first + count), noise)
        return noise.to(device)
    if first % 2 or count % 2:
        raise ValueError(f"samples {first}..{first + count - 1} with mirrored sampling; "
                         "expected whole pairs (an even popsize). Fix: use an even popsize")
    source.fill(draw, np.arange(first // 2, (first + count) // 2), noise[0::2])
    torch.neg(noise[0::2], out=noise[1::2])
    return noise.to(device)


def weighted_sums(noise: torch.Tensor, weights: Mapping[str, torch.Tensor],
                  kinds: Mapping[str, Sequence[str]], *,
                  mirrored: bool = False) -> dict[str, torch.Tensor]:
    """``{f"{name}.{kind}": sum}`` for each weight vector and each sum kind it needs: ``eps``
    (sum_i w_i eps_i), ``eps2`` (sum_i w_i eps_i^2) or ``outer`` (sum_i w_i eps_i eps_i^T).
    They add up over any split of the rows (of whole pairs, when ``mirrored``: a pair's rows
    are ``+eps_k`` and ``-eps_k``, so each pair is summed once, with weights ``w_2k - w_2k+1``
    for ``eps`` and ``w_2k + w_2k+1`` for the even kinds)."""
    if mirrored:
        noise = noise[0::2]
    sums = {}
    for name, needed in kinds.items():
        w = weights[name].to(noise.dtype)
        odd = even = w
        if mirrored:
            odd, even = w[0::2] - w[1::2], w[0::2] + w[1::2]
        for kind in needed:
            if kind == "eps":
                sums[f"{name}.eps"] = noise.T @ odd
            elif kind == "eps2":  # by blocks of rows: no second copy of a large share
                rows = max(1, SQUARE_NUMBERS // noise.shape[1])
                sums[f"{name}.eps2"] = sum(noise[i:i + rows].square().T @ even[i:i + rows]
                                           for i in range(0, len(noise), rows))
            elif kind == "outer":
                sums[f"{name}.outer"] = (noise.T * even) @ noise
            else:
                raise ValueError(f"sum kind {kind!r}; expected one of {SUM_KINDS}")
    return sums
