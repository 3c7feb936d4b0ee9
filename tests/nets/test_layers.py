"""Policy-search layers and recurrent cells, against hand arithmetic and torch's own cells."""

from __future__ import annotations

import pickle
import re

import numpy as np
import pytest
import torch
from torch import nn

from neurorun.nets import GRU, LSTM, RNN, Apply, Bin, Chain, Clip, Round, Slice

X = torch.tensor([-3.0, -0.5, 0.0, 0.25, 1.0, 2.75])


def test_clip():
    assert Clip(-1, 0.5)(X).tolist() == [-1.0, -0.5, 0.0, 0.25, 0.5, 0.5]


def test_bin_sends_values_to_the_bounds_around_the_midpoint():
    # interval [-1, 3]: midpoint 1; 1.0 itself stays at the midpoint (sign 0), as EvoTorch's Bin
    assert Bin(-1, 3)(X).tolist() == [-1.0, -1.0, -1.0, -1.0, 1.0, 3.0]


def test_slice_and_round():
    assert Slice(1, 3)(X).tolist() == [-0.5, 0.0]
    assert Slice(-2, 6)(X.repeat(2, 1)).tolist() == [[1.0, 2.75]] * 2
    assert Round()(torch.tensor([0.4, 1.6, -2.7])).tolist() == [0.0, 2.0, -3.0]
    assert Round(1)(torch.tensor([0.44, 1.66])).allclose(torch.tensor([0.4, 1.7]))


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("x ** 2", lambda x: x**2),
        ("2 * tanh(x) - 1", lambda x: 2 * np.tanh(x) - 1),
        ("clamp(x, -1, 1) + abs(x) / 2", lambda x: np.clip(x, -1, 1) + np.abs(x) / 2),
        ("sigmoid(-x) * pi", lambda x: np.pi / (1 + np.exp(x))),
        ("relu(x) + sin(x) * cos(x)", lambda x: np.maximum(x, 0) + np.sin(x) * np.cos(x)),
    ],
)
def test_apply_matches_numpy(expression, expected):
    got = Apply(expression)(X).numpy()
    np.testing.assert_allclose(got, expected(X.numpy().astype(np.float64)), rtol=1e-6)


@pytest.mark.parametrize(
    ("expression", "phrase"),
    [
        ("xx + 1", "unknown name 'xx' in the Apply expression; did you mean x"),
        ("y + 1", "unknown name 'y' in the Apply expression; valid: x, pi, e"),
        ("tanhh(x)", "unknown function 'tanhh' in the Apply expression; did you mean tanh"),
        ("__import__('os')", "unknown function '__import__'"),
        ("x.exp()", "call a function by its name"),
        ("3 + 4", "does not depend on x"),
        ("tanh(x, x)", "not valid"),
        ("x +", "not valid"),
        ("1 / 0 + x", "divides a constant by zero"),
    ],
)
def test_apply_rejects(expression, phrase):
    with pytest.raises(ValueError, match=re.escape(phrase)):
        Apply(expression)


def test_apply_pickles():
    restored = pickle.loads(pickle.dumps(Apply("x * 3")))
    assert restored(torch.tensor([2.0])).item() == 6.0


def _torch_cell(ours: nn.Module) -> nn.Module:
    cell_type = {RNN: nn.RNNCell, LSTM: nn.LSTMCell, GRU: nn.GRUCell}[type(ours)]
    cell = cell_type(ours.input_size, ours.hidden_size)
    cell.load_state_dict(ours.state_dict())  # the same parameter names and layout
    return cell


@pytest.mark.parametrize("cell_type", [RNN, LSTM, GRU])
def test_recurrent_cells_match_torch_cells(cell_type):
    torch.manual_seed(0)
    ours = cell_type(3, 4)
    reference = _torch_cell(ours)
    xs = torch.randn(5, 2, 3)  # 5 steps of a batch of 2
    h_ours, h_ref = None, None
    for x in xs:
        y, h_ours = ours(x, h_ours)
        h_ref = reference(x, h_ref)
        y_ref = h_ref[0] if cell_type is LSTM else h_ref
        torch.testing.assert_close(y, y_ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("cell_type", [RNN, LSTM, GRU])
def test_unbatched_input_gives_the_row_of_a_batch(cell_type):
    cell = cell_type(3, 4)
    x = torch.randn(2, 3)
    y_batch, _ = cell(x)
    y_single, h_single = cell(x[1])
    torch.testing.assert_close(y_single, y_batch[1])
    assert y_single.shape == (4,)


def test_chain_threads_hidden_state():
    torch.manual_seed(1)
    net = Chain(nn.Linear(3, 4), nn.Tanh(), GRU(4, 5), LSTM(5, 2))
    x = torch.randn(3)
    y1, h1 = net(x)
    assert len(h1) == 2 and isinstance(h1[1], tuple)
    y2, _ = net(x, h1)
    # by hand: the same steps through the members
    z = torch.tanh(net[0](x))
    g, g_state = net[2](z, h1[0])
    expected, _ = net[3](g, h1[1])
    torch.testing.assert_close(y2, expected)
    assert not torch.allclose(y1, y2)  # the state mattered


def test_chain_without_recurrent_members_returns_the_output_only():
    net = Chain(nn.Linear(3, 2), nn.Tanh())
    assert not net.is_recurrent
    assert net(torch.zeros(3)).shape == (2,)


def test_bad_sizes_are_named():
    with pytest.raises(ValueError, match="hidden_size=0"):
        RNN(3, 0)
    with pytest.raises(ValueError, match="lo < hi"):
        Bin(2, 2)
    with pytest.raises(ValueError, match="two integers"):
        Slice(0.5, 2)  # type: ignore[arg-type]
