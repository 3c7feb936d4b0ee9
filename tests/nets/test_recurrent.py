"""The recurrent cells (the formulas of neurorun.nets.cells, run by the torch layers and by the
numpy array form) against their textbook equations written out in numpy, gate by gate."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from neurorun.nets import GRU, LSTM, RNN
from neurorun.nets.arrays import ArrayPolicy, numpy_ops

X = np.array([0.7, -1.2])  # one input of 2 features
H = np.array([0.3, -0.5, 0.1])  # hidden state of 3
C = np.array([-0.4, 0.8, 0.25])  # the LSTM's cell state


def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


def _weights(gates: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(gates)
    rows = 3 * gates
    return {"weight_ih": rng.normal(size=(rows, 2)), "weight_hh": rng.normal(size=(rows, 3)),
            "bias_ih": rng.normal(size=rows), "bias_hh": rng.normal(size=rows)}


def _expected_lstm(w):
    def gate(k):  # rows 3k..3k+2 of both products: input, forget, cell, output
        rows = slice(3 * k, 3 * k + 3)
        return (w["weight_ih"][rows] @ X + w["bias_ih"][rows]
                + w["weight_hh"][rows] @ H + w["bias_hh"][rows])

    i, f, g, o = _sigmoid(gate(0)), _sigmoid(gate(1)), np.tanh(gate(2)), _sigmoid(gate(3))
    c = f * C + i * g
    return o * np.tanh(c), c


def _expected_gru(w):
    def parts(k):  # reset, update, new: the input's and the hidden state's part apart
        rows = slice(3 * k, 3 * k + 3)
        return (w["weight_ih"][rows] @ X + w["bias_ih"][rows],
                w["weight_hh"][rows] @ H + w["bias_hh"][rows])

    r = _sigmoid(sum(parts(0)))
    z = _sigmoid(sum(parts(1)))
    x_n, h_n = parts(2)
    n = np.tanh(x_n + r * h_n)  # the reset gate scales the hidden part only
    return (1 - z) * n + z * H


def _expected_rnn(w, activation):
    return activation(w["weight_ih"] @ X + w["bias_ih"] + w["weight_hh"] @ H + w["bias_hh"])


CASES = {  # the layer, its number of gates, its equations
    "LSTM": (lambda: LSTM(2, 3), 4, _expected_lstm),
    "GRU": (lambda: GRU(2, 3), 3, _expected_gru),
    "RNN tanh": (lambda: RNN(2, 3), 1, lambda w: _expected_rnn(w, np.tanh)),
    "RNN relu": (lambda: RNN(2, 3, nonlinearity="relu"), 1,
                 lambda w: _expected_rnn(w, lambda z: np.maximum(z, 0))),
}


def _case(name):
    make, gates, expected = CASES[name]
    w = _weights(gates)
    cell = make().double()
    cell.load_state_dict({k: torch.from_numpy(v) for k, v in w.items()})
    want = expected(w)
    return cell, w, want if isinstance(want, tuple) else (want,)


def _state(name, to):
    return (to(H), to(C)) if name == "LSTM" else to(H)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_torch_layer_follows_the_cell_equations(name):
    cell, _, want = _case(name)
    with torch.no_grad():
        y, state = cell(torch.from_numpy(X), _state(name, torch.from_numpy))
    np.testing.assert_allclose(y.numpy(), want[0], rtol=1e-12)
    got_state = state if isinstance(state, tuple) else (state,)
    for got, expected in zip(got_state, want, strict=True):
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_numpy_form_follows_the_cell_equations(name):
    cell, w, want = _case(name)
    form = ArrayPolicy(cell)
    params = np.concatenate([w[n].ravel() for n in ("weight_ih", "weight_hh", "bias_ih",
                                                     "bias_hh")])[None]  # (1, D), torch's order
    state = tuple(s[None] for s in (H, C)[:len(want)])
    ops = numpy_ops()
    y, next_state = form(ops, form.rows(params, ops), X[None], state)
    np.testing.assert_allclose(y[0], want[0], rtol=1e-12)
    for got, expected in zip(next_state, want, strict=True):
        np.testing.assert_allclose(got[0], expected, rtol=1e-12)
