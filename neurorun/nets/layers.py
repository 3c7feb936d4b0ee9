"""Parameter-free layers that policy search needs beyond torch.nn.

All of them act on the last dimension only (elementwise, or a slice of it), so a batch of
inputs ``(B, n)`` gives the rows that ``(n,)`` inputs would.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from neurorun.nets.expression import compile_expression


def _bounds(layer: str, lo: float, hi: float) -> tuple[float, float]:
    lo, hi = float(lo), float(hi)
    if not lo < hi:
        raise ValueError(f"{layer}(lo={lo}, hi={hi}): expected lo < hi; swap the two bounds")
    return lo, hi


class Clip(nn.Module):
    """Clamp every value into ``[lo, hi]``."""

    def __init__(self, lo: float, hi: float) -> None:
        super().__init__()
        self.lo, self.hi = _bounds("Clip", lo, hi)

    def forward(self, x: Tensor) -> Tensor:
        return x.clamp(self.lo, self.hi)

    def extra_repr(self) -> str:
        return f"lo={self.lo}, hi={self.hi}"


class Bin(nn.Module):
    """Send values above the midpoint of ``[lo, hi]`` to ``hi``, below it to ``lo``.

    A value exactly at the midpoint stays there (the sign of zero is zero), as in EvoTorch.
    """

    def __init__(self, lo: float, hi: float) -> None:
        super().__init__()
        self.lo, self.hi = _bounds("Bin", lo, hi)

    def forward(self, x: Tensor) -> Tensor:
        middle, half = (self.hi + self.lo) / 2, (self.hi - self.lo) / 2
        return middle + half * torch.sign(x - middle)

    def extra_repr(self) -> str:
        return f"lo={self.lo}, hi={self.hi}"


class Slice(nn.Module):
    """Keep ``x[..., start:stop]`` (Python slice rules; negative indices count from the end)."""

    def __init__(self, start: int, stop: int) -> None:
        super().__init__()
        if not (isinstance(start, int) and isinstance(stop, int)):
            raise ValueError(f"Slice(start={start!r}, stop={stop!r}): expected two integers")
        self.start, self.stop = start, stop

    def forward(self, x: Tensor) -> Tensor:
        return x[..., self.start : self.stop]

    def extra_repr(self) -> str:
        return f"start={self.start}, stop={self.stop}"


class Round(nn.Module):
    """Round to ``ndigits`` decimals (0: to integers)."""

    def __init__(self, ndigits: int = 0) -> None:
        super().__init__()
        if not isinstance(ndigits, int):
            raise ValueError(f"Round(ndigits={ndigits!r}): expected an integer")
        self.ndigits = ndigits

    def forward(self, x: Tensor) -> Tensor:
        return torch.round(x, decimals=self.ndigits)

    def extra_repr(self) -> str:
        return f"ndigits={self.ndigits}"


class Apply(nn.Module):
    """Apply an elementwise expression of ``x``, e.g. ``Apply("x ** 2")`` or
    ``Apply("clamp(2 * tanh(x), -1, 1)")``; see :mod:`neurorun.nets.expression`."""

    def __init__(self, expression: str) -> None:
        super().__init__()
        self.expression = expression
        self._function = compile_expression(expression)

    def forward(self, x: Tensor) -> Tensor:
        return self._function(x)

    def extra_repr(self) -> str:
        return repr(self.expression)

    def __getstate__(self) -> dict[str, Any]:
        # The compiled closure does not pickle; the expression text is enough to rebuild it.
        state = dict(self.__dict__)
        state.pop("_function", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._function = compile_expression(self.expression)
