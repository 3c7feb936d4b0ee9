"""The array forms of every layer of the network language (numpy and jax.numpy) against the
torch modules they stand for, one module per parameter row."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
import torch
from torch import nn

from neurorun.nets import is_recurrent, make_network, parameter_count, vector_to_module
from neurorun.nets.arrays import ArrayPolicy, NoArrayFormError, jax_ops, numpy_ops
from neurorun.nets.catalog import LAYERS

from . import user_policies

pytestmark = pytest.mark.extras("jax")

OBS, ACT, P = 5, 3, 7

# one member per layer of the language, with non-default arguments where a layer takes them
MEMBERS = {
    "CELU": "CELU(0.7)", "ELU": "ELU(0.6)", "GELU": "GELU()", "Hardshrink": "Hardshrink(0.3)",
    "Hardsigmoid": "Hardsigmoid()", "Hardswish": "Hardswish()", "Hardtanh": "Hardtanh(-0.4, 0.9)",
    "Identity": "Identity()", "LeakyReLU": "LeakyReLU(0.15)", "LogSigmoid": "LogSigmoid()",
    "Mish": "Mish()", "ReLU": "ReLU()", "ReLU6": "ReLU6()", "SELU": "SELU()", "SiLU": "SiLU()",
    "Sigmoid": "Sigmoid()", "Softplus": "Softplus(2, 1.5)", "Softshrink": "Softshrink(0.4)",
    "Softsign": "Softsign()", "Tanh": "Tanh()", "Tanhshrink": "Tanhshrink()",
    "Threshold": "Threshold(0.2, -3.0)", "Linear": "Linear(8, 8, bias=False)",
    "LayerNorm": "LayerNorm(8)", "PReLU": "PReLU(init=0.3)", "Softmax": "Softmax(dim=-1)",
    "LogSoftmax": "LogSoftmax(dim=-1)", "Clip": "Clip(-0.5, 0.7)", "Bin": "Bin(-1, 2)",
    "Slice": "Slice(2, 7)", "Round": "Round(1)",
    "Apply": "Apply('clamp(x ** 2 - sigmoid(x) * pi, max=2) + round(abs(x)) // 2')",
    "RNN": "RNN(8, 6)", "LSTM": "LSTM(8, 6)", "GRU": "GRU(8, 6, bias=False)",
}  # fmt: skip


def test_every_layer_of_the_language_is_listed():
    assert set(MEMBERS) == set(LAYERS)


def _chain(member: str) -> nn.Module:
    """``Linear(obs, 8) >> member >> Linear(width, act)``, the width being the member's output."""
    torch.manual_seed(0)
    width = 5 if member.startswith("Slice") else 6 if member[:3] in ("RNN", "LST", "GRU") else 8
    return make_network(f"Linear(obs_length, 8) >> {member} >> Linear({width}, act_length)",
                        obs_length=OBS, act_length=ACT)


def _torch_rows(module: nn.Module, params: torch.Tensor, inputs: list[torch.Tensor]):
    """Each row's own module run over the steps (hidden state carried): (T, P, act)."""
    recurrent = is_recurrent(module)
    outputs = []
    for row, p in enumerate(params):
        single, h, steps = vector_to_module(module, p), None, []
        for x in inputs:
            with torch.no_grad():
                if recurrent:
                    y, h = single(x[row], h)
                else:
                    y = single(x[row])
            steps.append(y)
        outputs.append(torch.stack(steps))
    return torch.stack(outputs, dim=1).numpy()


def _array_rows(form: ArrayPolicy, ops, params: np.ndarray, inputs: list[torch.Tensor]):
    named = form.rows(ops.xp.asarray(params), ops)
    state = form.zero_state(ops, P, np.float32)
    outputs = []
    for x in inputs:
        y, state = form(ops, named, ops.xp.asarray(x.numpy()), state)
        outputs.append(np.asarray(y))
    return np.stack(outputs)


@pytest.mark.parametrize("name", sorted(MEMBERS))
@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_array_form_equals_the_torch_module_on_each_row(name, backend):
    module = _chain(MEMBERS[name])
    form = ArrayPolicy(module)
    ops = numpy_ops() if backend == "numpy" else jax_ops()
    if not form.runs_on(ops):
        assert name == "GELU" and backend == "numpy"  # erf: jax has it, numpy does not
        return
    generator = torch.Generator().manual_seed(1)
    params = torch.randn(P, parameter_count(module), generator=generator)
    steps = 4 if form.is_recurrent else 1
    inputs = [2 * torch.randn(P, OBS, generator=generator) for _ in range(steps)]
    expected = _torch_rows(module, params, inputs)
    got = _array_rows(form, ops, params.numpy(), inputs)
    np.testing.assert_allclose(got, expected, rtol=2e-5, atol=2e-5)


def test_an_apply_dividing_by_zero_gives_non_finite_values_without_numpy_warnings():
    """Inf and nan are reported as non-finite fitness; numpy's
    RuntimeWarnings (one per step) must not reach the console."""
    import warnings

    module = _chain("Apply('x / 0 + log(x - 100)')")
    form = ArrayPolicy(module)
    params = np.ones((P, parameter_count(module)), np.float32)
    inputs = [torch.ones(P, OBS), torch.zeros(P, OBS)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = _array_rows(form, numpy_ops(), params, inputs)
    assert not np.isfinite(got).any()


def test_recurrent_state_is_explicit_and_zero_at_start():
    form = ArrayPolicy(_chain("LSTM(8, 6)"))
    assert form.is_recurrent and form.state_sizes == (6, 6)
    state = form.zero_state(jax_ops(), P, jnp.float32)
    assert [s.shape for s in state] == [(P, 6), (P, 6)] and not any(s.any() for s in state)


@pytest.mark.parametrize("module", [
    user_policies.ResidualPolicy(obs_length=OBS, act_length=ACT, hidden=4),
    nn.Sequential(nn.Linear(OBS, 4), nn.Dropout(0.0), nn.Linear(4, ACT)),
])
def test_a_module_outside_the_language_has_no_array_form(module):
    with pytest.raises(NoArrayFormError, match=type(module[1] if isinstance(module, nn.Sequential)
                                               else module).__name__):
        ArrayPolicy(module)


def test_a_hooked_layer_has_no_array_form():
    module = _chain("Tanh()")
    module[1].register_forward_hook(lambda mod, args, out: out)
    with pytest.raises(NoArrayFormError, match="hooks"):
        ArrayPolicy(module)


def test_tied_parameters_have_no_array_form():
    shared = nn.Linear(OBS, OBS)
    with pytest.raises(NoArrayFormError, match="shares parameters"):
        ArrayPolicy(nn.Sequential(shared, nn.Tanh(), shared))
