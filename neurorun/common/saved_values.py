"""The rules of the values that both state.pt and a policy file hold: a solution and
observation statistics. Both readers (state.pt's checks in :mod:`neurorun.record.state`, a
policy's loader through :meth:`RunningNorm.from_export`) refuse the same values by these
rules, each in its own words."""

from __future__ import annotations

import math
from typing import Any

import torch

from neurorun.common.values import is_exact_number

# the relative rounding a sum of squares may lose against the squared sum (float64 sums)
ROUNDING = 1e-6


class SavedValueError(ValueError):
    """A value no run saves: ``key`` (its name in the file) is ``value``, and ``expected`` says
    what a run saves there."""

    def __init__(self, key: str, value: Any, expected: str):
        super().__init__(f"{key}: expected {expected}")
        self.key, self.value, self.expected = key, value, expected


def check_vector(key: str, value: Any, size: int | None = None) -> None:
    """A finite floating tensor of shape ``(size,)`` (of any length where ``size`` is None): a
    solution, a sum, a mean (the runner stops a search or a statistic that is not finite)."""
    if not (isinstance(value, torch.Tensor) and value.is_floating_point() and value.dim() == 1
            and size in (None, value.numel())):
        raise SavedValueError(key, value, f"a floating tensor of shape ({size or 'n'},)")
    if not bool(torch.isfinite(value).all()):
        raise SavedValueError(key, value, "finite values (a run saves no other)")


def check_min_variance(value: Any, key: str = "min_variance") -> None:
    """A variance floor of observation statistics: a finite number >= 0 (0: none)."""
    if not is_exact_number(value) or not (math.isfinite(value) and value >= 0):
        raise SavedValueError(key, value, "a finite number >= 0 (a variance floor)")


def check_sums(count: Any, total: Any, squares: Any, *, size: int | None = None,
               prefix: str = "") -> None:
    """Observation statistics as :class:`~neurorun.problems.RunningNorm` keeps them: ``count``
    a whole number >= 0 (or a 0-d floating tensor of one), ``total`` and ``squares`` vectors
    (:func:`check_vector`) of one length (``size`` where given), both zero while nothing was
    counted, and no variance below 0 (``count * squares >= total**2``, within rounding).
    ``prefix`` goes before the keys (a policy's ``obs_``)."""
    if isinstance(count, torch.Tensor) and count.dim() == 0 and count.is_floating_point():
        count = float(count)
    if not is_exact_number(count) or not math.isfinite(count) or count < 0 or count % 1:
        raise SavedValueError(f"{prefix}count", count,
                              "a whole number >= 0 (of observations)")
    check_vector(f"{prefix}sum", total, size)
    check_vector(f"{prefix}sum_of_squares", squares, total.numel())
    if count == 0 and bool(total.any() or squares.any()):
        raise SavedValueError(f"{prefix}count", count, "> 0 where the sums are not 0")
    total, squares = total.double(), squares.double()
    if not bool((count * squares >= total**2 * (1 - ROUNDING)).all()):
        raise SavedValueError(f"{prefix}sum_of_squares", squares,
                              f"values >= {prefix}sum**2 / {prefix}count (a variance >= 0)")
