"""Recurrent policy layers: ``RNN``, ``LSTM`` and ``GRU`` cells that run one step per call.

Each layer's ``forward(x, h=None)`` returns ``(y, h_next)``: ``x`` is one observation ``(in,)``
or a batch ``(B, in)``; ``h=None`` means a zero state. ``y`` is the new hidden vector (for the
LSTM, ``h_next`` is the pair ``(h, c)``). Parameters follow torch's cell layout (``weight_ih``,
``weight_hh``, ``bias_ih``, ``bias_hh``, gates stacked in torch's order) so the population path
in :mod:`neurorun.nets.batched` runs the very same step functions on weights of shape
``(P, out, in)``. The cells' formulas are :mod:`neurorun.nets.cells`, shared with the array
forms of :mod:`neurorun.nets.arrays`.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from neurorun.nets.cells import Activations, gru_cell, lstm_cell, rnn_cell


def linear(x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """``x @ weight.T + bias`` for one module, or for a population when ``weight`` is 3-D.

    Args:
        x: ``(..., in)`` for one module; ``(P, in)`` for a population.
        weight: ``(out, in)`` for one module; ``(P, out, in)`` for a population.
        bias: ``(out,)``, ``(P, out)`` or None.
    """
    if weight.dim() == 2:
        return F.linear(x, weight, bias)
    rows = x.unsqueeze(1)  # (P, 1, in)
    if bias is None:
        return torch.bmm(rows, weight.transpose(1, 2)).squeeze(1)
    return torch.baddbmm(bias.unsqueeze(1), rows, weight.transpose(1, 2)).squeeze(1)


def _zeros_like_hidden(x: Tensor, hidden_size: int) -> Tensor:
    return x.new_zeros((*x.shape[:-1], hidden_size))


TORCH = Activations(sigmoid=torch.sigmoid, tanh=torch.tanh, relu=torch.relu)


def _pre_activations(x: Tensor, h: Tensor, w: tuple[Tensor | None, ...]) -> tuple[Tensor, Tensor]:
    """``(W_ih x + b_ih, W_hh h + b_hh)``; ``w = (weight_ih, weight_hh, bias_ih, bias_hh)``."""
    return linear(x, w[0], w[2]), linear(h, w[1], w[3])


class Recurrent(nn.Module):
    """Shared parameters and bookkeeping of the recurrent cells."""

    num_gates = 1

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True) -> None:
        super().__init__()
        if int(input_size) < 1 or int(hidden_size) < 1:
            raise ValueError(
                f"{type(self).__name__}(input_size={input_size}, hidden_size={hidden_size}): "
                "both sizes must be positive integers"
            )
        self.input_size, self.hidden_size = int(input_size), int(hidden_size)
        rows = self.num_gates * self.hidden_size
        self.weight_ih = nn.Parameter(torch.empty(rows, self.input_size))
        self.weight_hh = nn.Parameter(torch.empty(rows, self.hidden_size))
        self.bias_ih = nn.Parameter(torch.empty(rows)) if bias else None
        self.bias_hh = nn.Parameter(torch.empty(rows)) if bias else None
        bound = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            nn.init.uniform_(p, -bound, bound)

    @property
    def weights(self) -> tuple[Tensor | None, ...]:
        return (self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)

    def zero_state(self, x: Tensor) -> Any:
        """The state that ``h=None`` stands for, shaped for the input ``x``."""
        return _zeros_like_hidden(x, self.hidden_size)

    def step(self, x: Tensor, h: Any, weights: tuple[Tensor | None, ...]) -> tuple[Tensor, Any]:
        """One step with explicit weights (the module's own, or a population's views)."""
        raise NotImplementedError

    def forward(self, x: Tensor, h: Any = None) -> tuple[Tensor, Any]:
        return self.step(x, self.zero_state(x) if h is None else h, self.weights)

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}, bias={self.bias_ih is not None}"


class RNN(Recurrent):
    """Elman cell ``h' = tanh(W_ih x + b_ih + W_hh h + b_hh)``; ``nonlinearity`` may be relu."""

    def __init__(
        self, input_size: int, hidden_size: int, nonlinearity: str = "tanh", bias: bool = True
    ) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNN nonlinearity={nonlinearity!r}: expected 'tanh' or 'relu'")
        super().__init__(input_size, hidden_size, bias)
        self.nonlinearity = nonlinearity

    def step(self, x: Tensor, h: Any, weights: tuple[Tensor | None, ...]) -> tuple[Tensor, Any]:
        h_next = rnn_cell(TORCH, *_pre_activations(x, h, weights), self.nonlinearity)
        return h_next, h_next


class LSTM(Recurrent):
    """LSTM cell; the state is the pair ``(h, c)`` and the output is ``h``."""

    num_gates = 4

    def zero_state(self, x: Tensor) -> Any:
        return (_zeros_like_hidden(x, self.hidden_size), _zeros_like_hidden(x, self.hidden_size))

    def step(self, x: Tensor, h: Any, weights: tuple[Tensor | None, ...]) -> tuple[Tensor, Any]:
        h_next, c_next = lstm_cell(TORCH, *_pre_activations(x, h[0], weights), h[1])
        return h_next, (h_next, c_next)


class GRU(Recurrent):
    """GRU cell; the output is the new hidden vector."""

    num_gates = 3

    def step(self, x: Tensor, h: Any, weights: tuple[Tensor | None, ...]) -> tuple[Tensor, Any]:
        h_next = gru_cell(TORCH, *_pre_activations(x, h, weights), h)
        return h_next, h_next
