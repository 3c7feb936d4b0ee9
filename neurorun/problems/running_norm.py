"""``RunningNorm``: running mean and standard deviation of observations, mergeable.

Sums are kept in float64 (count, sum, sum of squares), so merging the statistics of two
streams equals feeding one object both streams, and a main process can add up the deltas
that workers collected.
"""

from __future__ import annotations

from typing import Any, TypedDict

import torch
from torch import Tensor

from neurorun.common.saved_values import (
    SavedValueError,
    check_min_variance,
    check_sums,
    check_vector,
)

MIN_VARIANCE = 1e-2  # the reference's floor: a near-constant feature is not blown up
# with no floor (min_variance 0), a constant feature is ignored, as ARS ignores one whose stdev
# is below 1e-7: here a variance within the float64 sums' rounding, 1e-10 times the feature's
# mean squared (at least 1e-10), since the sums give a constant feature a variance near 0
CONSTANT_VARIANCE = 1e-10


def normalization_affine(mean: Tensor, stdev: Tensor) -> tuple[Tensor, Tensor]:
    """``(scale, shift)`` that normalize observations as ``obs * scale + shift``, i.e.
    ``(obs - mean) / stdev``; the one formula of rollouts, ``normalize`` and exported policies
    (the same float operations, so a saved policy scores what it scored in the run). A stdev
    of 0 marks a constant feature: it is multiplied by 0 (as ARS does)."""
    scale = torch.where(stdev > 0, 1.0 / stdev, torch.zeros_like(stdev))
    return scale, -mean * scale


class NormRecord(TypedDict):
    """A RunningNorm's record (``state_dict``): state.pt's ``problem.obs_stats`` and
    ``best.obs_stats``."""

    size: int
    min_variance: float
    count: Tensor  # a float64 scalar: the observations summed
    sum: Tensor  # (size,) float64
    sum_of_squares: Tensor  # (size,) float64


class RunningNorm:
    """Observation statistics over a feature vector of length ``size``.

    Args:
        size: number of features.
        min_variance: variance floor used by ``stdev``; 0: none, and a constant feature
            gets the stdev 0 (ignored: ``normalization_affine``), as ARS ignores one.
        device: where the sums live.
    """

    def __init__(self, size: int, *, min_variance: float = MIN_VARIANCE,
                 device: torch.device | str = "cpu"):
        self.size = int(size)
        self.min_variance = float(min_variance)
        self.count = torch.zeros((), dtype=torch.float64, device=device)
        self.sum = torch.zeros(self.size, dtype=torch.float64, device=device)
        self.sum_of_squares = torch.zeros(self.size, dtype=torch.float64, device=device)

    @property
    def device(self) -> torch.device:
        return self.sum.device

    def update(self, data: Tensor | RunningNorm, mask: Tensor | None = None, *,
               scratch: bool = False) -> None:
        """Add a batch of observations ``(..., size)`` (rows where ``mask`` is True), or the
        statistics of another RunningNorm.

        ``scratch``: ``data`` (float64, on this device) is a buffer of the caller's that the
        update may overwrite (with the squares: no temporary of its size is made)."""
        if isinstance(data, RunningNorm):
            if data.size != self.size:
                raise ValueError(f"cannot merge a RunningNorm of size {data.size} into one of "
                                 f"size {self.size}")
            self.count += data.count.to(self.device)
            self.sum += data.sum.to(self.device)
            self.sum_of_squares += data.sum_of_squares.to(self.device)
            return
        x = torch.as_tensor(data, device=self.device).reshape(-1, self.size)
        owned = scratch or x.dtype != torch.float64  # else .to below returns the caller's data
        x = x.to(torch.float64)
        if mask is None:
            self.count += x.shape[0]
            self.sum += x.sum(0)
            self.sum_of_squares += (x.mul_(x) if owned else x * x).sum(0)
            return
        weight = torch.as_tensor(mask, device=self.device).reshape(-1).to(torch.float64)
        self.count += weight.sum()
        self.sum += weight @ x
        self.sum_of_squares += weight @ (x * x)

    @property
    def mean(self) -> Tensor:
        return self.sum / self.count.clamp(min=1.0)

    @property
    def stdev(self) -> Tensor:
        """sqrt(max(variance, min_variance)); all ones before any data arrived. Without a
        floor (min_variance 0), 0 for a constant feature: one whose variance is within the
        sums' rounding, ``CONSTANT_VARIANCE`` times its mean squared (at least 1)."""
        count = self.count.clamp(min=1.0)
        mean = self.mean
        variance = (self.sum_of_squares / count - mean**2).clamp(min=self.min_variance)
        if self.min_variance == 0:
            constant = variance <= CONSTANT_VARIANCE * (mean**2).clamp(min=1.0)
            variance = torch.where(constant, torch.zeros_like(variance), variance)
        return torch.where(self.count > 0, variance.sqrt(), torch.ones_like(variance))

    def affine(self, device: torch.device | str, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
        """``(scale, shift)`` with ``normalize(obs) == obs * scale + shift``."""
        return normalization_affine(self.mean.to(device, dtype), self.stdev.to(device, dtype))

    def normalize(self, obs: Tensor) -> Tensor:
        """``(obs - mean) / stdev`` in obs's dtype, computed as ``obs * scale + shift``."""
        scale, shift = self.affine(obs.device, obs.dtype)
        return obs * scale + shift

    def export(self) -> dict[str, Any]:
        """What a saved policy keeps: mean and stdev (float32) for normalizing, and the float64
        sums, count and variance floor they come from."""
        return {"obs_mean": self.mean.float().cpu(), "obs_stdev": self.stdev.float().cpu(),
                "obs_sum": self.sum.cpu(), "obs_sum_of_squares": self.sum_of_squares.cpu(),
                "obs_count": float(self.count), "obs_min_variance": self.min_variance}

    def copy(self) -> RunningNorm:
        result = RunningNorm(self.size, min_variance=self.min_variance, device=self.device)
        result.update(self)
        return result

    def __sub__(self, other: RunningNorm) -> RunningNorm:
        """The statistics added since ``other`` was a copy of this one (a delta to ship)."""
        result = self.copy()
        result.count -= other.count.to(self.device)
        result.sum -= other.sum.to(self.device)
        result.sum_of_squares -= other.sum_of_squares.to(self.device)
        return result

    def to(self, device: torch.device | str) -> RunningNorm:
        result = RunningNorm(self.size, min_variance=self.min_variance, device=device)
        result.update(self)
        return result

    def state_dict(self) -> NormRecord:
        return NormRecord(size=self.size, min_variance=self.min_variance,
                          count=self.count.cpu().clone(), sum=self.sum.cpu().clone(),
                          sum_of_squares=self.sum_of_squares.cpu().clone())

    def load_state_dict(self, state: NormRecord) -> None:
        if int(state["size"]) != self.size:
            raise ValueError(f"state of a RunningNorm of size {state['size']} cannot load into "
                             f"one of size {self.size}")
        self.min_variance = float(state["min_variance"])
        self.count = torch.as_tensor(state["count"], dtype=torch.float64).to(self.device)
        self.sum = torch.as_tensor(state["sum"], dtype=torch.float64).to(self.device)
        self.sum_of_squares = torch.as_tensor(state["sum_of_squares"],
                                              dtype=torch.float64).to(self.device)

    @classmethod
    def from_export(cls, exported: dict[str, Any]) -> RunningNorm:
        """The statistics a saved policy holds (``export``): exactly from the sums, count and
        variance floor (files older than the floor's key: ``MIN_VARIANCE``), or (a policy
        pickle has no count) as one observation with that mean and stdev.

        Raises:
            SavedValueError: statistics no run saves, by the rules state.pt's are held to.
        """
        if exported.get("obs_count") is not None and exported.get("obs_sum") is not None:
            total, squares = exported["obs_sum"], exported.get("obs_sum_of_squares")
            check_sums(exported["obs_count"], total, squares, prefix="obs_")
            floor = exported.get("obs_min_variance", MIN_VARIANCE)
            check_min_variance(floor, "obs_min_variance")
            return cls.from_state_dict(NormRecord(
                size=total.numel(), min_variance=float(floor),
                count=torch.tensor(float(exported["obs_count"])), sum=total,
                sum_of_squares=squares))
        mean, stdev = exported.get("obs_mean"), exported.get("obs_stdev")
        check_vector("obs_mean", mean)
        check_vector("obs_stdev", stdev, mean.numel())
        if not bool((stdev >= 0).all()):
            raise SavedValueError("obs_stdev", stdev, "values >= 0 (a standard deviation)")
        mean, stdev = mean.double(), stdev.double()
        return cls.from_state_dict(NormRecord(size=mean.numel(), min_variance=0.0,
                                              count=torch.tensor(1.0), sum=mean,
                                              sum_of_squares=stdev * stdev + mean * mean))

    @classmethod
    def from_state_dict(cls, state: NormRecord) -> RunningNorm:
        result = cls(int(state["size"]))
        result.load_state_dict(state)
        return result

    def __repr__(self) -> str:
        return f"RunningNorm(size={self.size}, count={float(self.count):g})"
