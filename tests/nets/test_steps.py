"""The per-member torch steps of ``BatchedPolicy`` (``neurorun.nets.steps``), each against numpy
written out by hand: row p of a step's output is member p's output on row p of the input, with
row p of the parameters (float64 throughout, so the sums agree to rounding)."""

import numpy as np
import pytest
import torch
from torch import nn

from neurorun.nets import GRU, LSTM, Chain
from neurorun.nets.steps import (
    Step,
    VmapStep,
    chain_members,
    make_step,
    map_state,
    parameter_layout,
)

P = 3  # population rows


def bound(member: nn.Module, seed: int = 0) -> tuple[Step, np.ndarray]:
    """The step of ``member`` bound to random parameter rows ``(P, D)``, and those rows."""
    layout, size = parameter_layout(member)
    params = torch.from_numpy(np.random.default_rng(seed).standard_normal((P, size)))
    step = make_step(member, "", layout)
    step.bind(params)
    return step, params.numpy()


def inputs(width: int, seed: int = 1) -> torch.Tensor:
    return torch.from_numpy(np.random.default_rng(seed).standard_normal((P, width)))


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def test_parameter_layout_is_offsets_in_named_parameter_order():
    net = nn.Sequential(nn.Linear(3, 2), nn.Tanh(), nn.Linear(2, 1, bias=False))
    layout, size = parameter_layout(net)
    assert layout == {"0.weight": (0, (2, 3)), "0.bias": (6, (2,)), "2.weight": (8, (1, 2))}
    assert size == 2 * 3 + 2 + 1 * 2


def test_chain_members_flattens_sequentials_and_chains_only():
    class OwnSequential(nn.Sequential):  # a subclass may change forward: one member
        pass

    own = OwnSequential(nn.Tanh())
    net = nn.Sequential(nn.Linear(3, 2), Chain(nn.Tanh(), nn.Sequential(nn.ReLU())), own)
    members = chain_members(net)
    assert [prefix for prefix, _ in members] == ["0.", "1.0.", "1.1.0.", "2."]
    assert [type(m) for _, m in members] == [nn.Linear, nn.Tanh, nn.ReLU, OwnSequential]
    assert members[3][1] is own


def test_map_state_applies_to_every_tensor_and_keeps_the_nesting():
    state = (torch.tensor([1.0]), [torch.tensor([2.0]), torch.tensor([3.0])])
    doubled = map_state(lambda t: 2 * t, state)
    assert type(doubled) is tuple and type(doubled[1]) is list
    assert [float(doubled[0]), float(doubled[1][0]), float(doubled[1][1])] == [2.0, 4.0, 6.0]
    assert map_state(lambda t: 2 * t, None) is None


@pytest.mark.parametrize("member, kind", [
    (nn.Linear(2, 2), "_LinearStep"), (nn.LayerNorm(2), "_LayerNormStep"),
    (LSTM(2, 2), "_RecurrentStep"), (nn.Tanh(), "_RowWiseStep"),
    (nn.Softmax(dim=-1), "_RowWiseStep"), (nn.Softmax(dim=0), "VmapStep"),  # dim 0 mixes rows
    (nn.PReLU(), "VmapStep"),  # a layer with parameters is no row-wise step
])
def test_each_member_gets_its_kind_of_step(member, kind):
    layout, _ = parameter_layout(member)
    assert type(make_step(member, "", layout)).__name__ == kind


@pytest.mark.parametrize("bias", [True, False])
def test_linear_rows_use_their_own_weights(bias):
    step, params = bound(nn.Linear(4, 2, bias=bias))
    x = inputs(4)
    weights = params[:, :8].reshape(P, 2, 4)
    expected = np.stack([weights[p] @ x[p].numpy() for p in range(P)])
    if bias:
        expected += params[:, 8:]
    np.testing.assert_allclose(step(x).numpy(), expected, rtol=1e-12)


def test_linear_views_follow_the_parameters_in_place():
    """``BatchedPolicy.update_rows`` writes into the bound parameters: no rebind needed."""
    layout, size = parameter_layout(nn.Linear(2, 1))
    params = torch.ones(P, size, dtype=torch.float64)
    step = make_step(nn.Linear(2, 1), "", layout)
    step.bind(params)
    params[1] = torch.tensor([2.0, 0.0, -1.0], dtype=torch.float64)  # w = (2, 0), b = -1
    x = torch.tensor([[1.0, 1.0], [3.0, 5.0], [0.0, 0.0]], dtype=torch.float64)
    np.testing.assert_array_equal(step(x).numpy(), [[3.0], [5.0], [1.0]])


def test_layer_norm_normalizes_each_row_then_scales_by_its_own_parameters():
    step, params = bound(nn.LayerNorm(4, eps=1e-5))
    x = inputs(4).numpy()
    mean, var = x.mean(1, keepdims=True), x.var(1, keepdims=True)  # biased, as LayerNorm's
    expected = (x - mean) / np.sqrt(var + 1e-5) * params[:, :4] + params[:, 4:]
    np.testing.assert_allclose(step(torch.from_numpy(x)).numpy(), expected, rtol=1e-10)


def test_layer_norm_without_affine_parameters_only_normalizes():
    step, _ = bound(nn.LayerNorm(3, elementwise_affine=False))
    x = torch.tensor([[1.0, 2.0, 3.0]] * P, dtype=torch.float64)
    expected = np.array([[-1.0, 0.0, 1.0]] * P) / np.sqrt(2 / 3 + 1e-5)  # mean 2, var 2/3
    np.testing.assert_allclose(step(x).numpy(), expected, rtol=1e-12)


def test_lstm_rows_carry_their_own_state_over_two_steps():
    step, params = bound(LSTM(2, 3))
    w_ih, w_hh = params[:, :24].reshape(P, 12, 2), params[:, 24:60].reshape(P, 12, 3)
    b = params[:, 60:72] + params[:, 72:84]
    h, c = np.zeros((P, 3)), np.zeros((P, 3))
    state = None
    for t in range(2):
        x = inputs(2, seed=t)
        y, state = step(x, state)
        gates = np.einsum("pgi,pi->pg", w_ih, x.numpy()) + np.einsum("pgh,ph->pg", w_hh, h) + b
        i, f, g, o = np.split(gates, 4, axis=1)  # torch's order: input, forget, cell, output
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
        np.testing.assert_allclose(y.numpy(), h, rtol=1e-10)
        np.testing.assert_allclose(state[1].numpy(), c, rtol=1e-10)


def test_gru_rows_follow_the_gru_equations():
    step, params = bound(GRU(2, 2))
    w_ih, w_hh = params[:, :12].reshape(P, 6, 2), params[:, 12:24].reshape(P, 6, 2)
    b_ih, b_hh = params[:, 24:30], params[:, 30:36]
    h = inputs(2, seed=5).numpy()
    x = inputs(2, seed=6).numpy()
    gx = np.einsum("pgi,pi->pg", w_ih, x) + b_ih
    gh = np.einsum("pgh,ph->pg", w_hh, h) + b_hh
    r = sigmoid(gx[:, 0:2] + gh[:, 0:2])  # torch's order: reset, update, new
    z = sigmoid(gx[:, 2:4] + gh[:, 2:4])
    n = np.tanh(gx[:, 4:6] + r * gh[:, 4:6])
    y, _ = step(torch.from_numpy(x), torch.from_numpy(h))
    np.testing.assert_allclose(y.numpy(), (1 - z) * n + z * h, rtol=1e-10)


def test_a_row_wise_layer_runs_its_hooks_when_it_has_some():
    member = nn.Tanh()
    step, _ = bound(member)
    x = inputs(3)
    np.testing.assert_allclose(step(x).numpy(), np.tanh(x.numpy()), rtol=1e-12)
    member.register_forward_hook(lambda module, args, output: output * 0)
    step.bind(torch.zeros(P, 0, dtype=torch.float64))  # hooks are looked for at bind
    np.testing.assert_array_equal(step(x).numpy(), np.zeros((P, 3)))


class Scaled(nn.Module):
    """``x * scale + offset`` with a float32 buffer (the step casts it to the params' dtype)."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(2))
        self.register_buffer("offset", torch.tensor([0.5, -0.5]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.scale + self.offset


def test_any_other_module_runs_per_row_under_vmap():
    step, params = bound(Scaled())
    assert isinstance(step, VmapStep) and not step.recurrent
    x = inputs(2)
    y = step(x)
    assert y.dtype == torch.float64
    np.testing.assert_allclose(y.numpy(), x.numpy() * params + [0.5, -0.5], rtol=1e-12)


class Tied(nn.Module):
    """Two layers sharing one weight: ``W tanh(W x)``."""

    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Linear(2, 2, bias=False)
        self.second = nn.Linear(2, 2, bias=False)
        self.second.weight = self.first.weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.second(torch.tanh(self.first(x)))


def test_a_shared_parameter_is_one_slot_seen_under_both_names():
    member = Tied()
    layout, size = parameter_layout(member)
    assert size == 4  # one weight, stored once
    params = torch.from_numpy(np.random.default_rng(0).standard_normal((P, size)))
    step = VmapStep(member, "", layout)
    step.bind(params)
    x = inputs(2).numpy()
    w = params.numpy().reshape(P, 2, 2)
    expected = np.stack([w[p] @ np.tanh(w[p] @ x[p]) for p in range(P)])
    np.testing.assert_allclose(step(torch.from_numpy(x)).numpy(), expected, rtol=1e-12)


class Accumulate(nn.Module):
    """A user's recurrent module: ``h = h + gain * x``, returned as output and state."""

    def __init__(self) -> None:
        super().__init__()
        self.gain = nn.Parameter(torch.ones(2))

    def forward(self, x: torch.Tensor, h: torch.Tensor | None = None) -> tuple:
        h = x * self.gain if h is None else h + x * self.gain
        return h, h


def test_a_users_recurrent_module_carries_each_rows_state():
    step, gain = bound(Accumulate())
    assert step.recurrent
    x1, x2 = inputs(2, seed=1), inputs(2, seed=2)
    _, state = step(x1)
    y, _ = step(x2, state)
    np.testing.assert_allclose(y.numpy(), gain * (x1.numpy() + x2.numpy()), rtol=1e-12)
