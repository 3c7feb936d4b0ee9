"""The recurrent cells' formulas, written once for torch tensors, numpy and jax.numpy arrays.

Each formula takes the two pre-activations ``gx = W_ih x + b_ih`` and ``gh = W_hh h + b_hh``
(the caller computes them with its own products: one module, or a population's rows) and the
activations of the caller's array library. The torch modules of :mod:`neurorun.nets.recurrent`
and the array forms of :mod:`neurorun.nets.arrays` both run these functions, so a cell's
rule lives here only. Gates are stacked in torch's order (LSTM: input, forget, cell, output;
GRU: reset, update, new) along the last axis, which works for one row ``(4H,)`` or a batch
``(B, 4H)`` alike.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Array = Any  # a torch tensor, a numpy or a jax array


@dataclass(frozen=True)
class Activations:
    """The activation functions of one array library (torch's own, or numpy's overflow-safe
    sigmoid), so each path keeps its results bit for bit."""

    sigmoid: Callable[[Array], Array]
    tanh: Callable[[Array], Array]
    relu: Callable[[Array], Array]


def _gate(stacked: Array, k: int, count: int) -> Array:
    """Gate ``k`` of ``count`` stacked along the last axis (as ``chunk(count, dim=-1)[k]``)."""
    size = stacked.shape[-1] // count
    return stacked[..., k * size:(k + 1) * size]


def rnn_cell(act: Activations, gx: Array, gh: Array, nonlinearity: str) -> Array:
    """Elman: ``h' = tanh(gx + gh)`` (or relu)."""
    pre = gx + gh
    return act.tanh(pre) if nonlinearity == "tanh" else act.relu(pre)


def lstm_cell(act: Activations, gx: Array, gh: Array, c: Array) -> tuple[Array, Array]:
    """LSTM as torch.nn.LSTMCell: ``(h', c')`` from the stacked gates and the cell state ``c``."""
    gates = gx + gh
    i, f, g, o = (_gate(gates, k, 4) for k in range(4))
    c_next = act.sigmoid(f) * c + act.sigmoid(i) * act.tanh(g)
    return act.sigmoid(o) * act.tanh(c_next), c_next


def gru_cell(act: Activations, gx: Array, gh: Array, h: Array) -> Array:
    """GRU as torch.nn.GRUCell: the reset gate scales only the hidden part of the new gate."""
    r = act.sigmoid(_gate(gx, 0, 3) + _gate(gh, 0, 3))
    z = act.sigmoid(_gate(gx, 1, 3) + _gate(gh, 1, 3))
    n = act.tanh(_gate(gx, 2, 3) + r * _gate(gh, 2, 3))
    return (1 - z) * n + z * h
