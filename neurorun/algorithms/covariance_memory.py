"""Refusing full-covariance algorithms whose D x D matrices would not fit in memory."""

from __future__ import annotations

import torch

MAX_FULL_DIMENSION = 10_000
MAX_FULL_BYTES = 2 * 1024**3
MATRICES = 4  # covariance, eigenvectors, and the decomposition's workspace


def check_full_covariance(name: str, solution_length: int, dtype: torch.dtype | None,
                          *, alternative: str) -> None:
    """Raise a ValueError naming `alternative` when D x D matrices are too large."""
    itemsize = torch.empty((), dtype=dtype or torch.float32).element_size()
    needed = MATRICES * solution_length**2 * itemsize
    if solution_length > MAX_FULL_DIMENSION or needed > MAX_FULL_BYTES:
        raise ValueError(
            f"{name} with solution_length={solution_length} needs about {needed / 1024**3:.1f} GiB "
            f"for its {solution_length} x {solution_length} covariance (and an eigendecomposition "
            f"costing D^3); expected D <= {MAX_FULL_DIMENSION} and under "
            f"{MAX_FULL_BYTES // 1024**3} GiB. Fix: use {alternative!r} (separable, linear in D)."
        )
