"""BatchedPolicy's host (numpy) path against a loop over single modules."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from neurorun.nets import BatchedPolicy, make_network, parameter_count, vector_to_module

OBS, ACT, P = 7, 3, 6


def _policy(spec: str, dtype=torch.float32) -> tuple[BatchedPolicy, nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    module = make_network(spec, obs_length=OBS, act_length=ACT)
    params = 0.5 * torch.randn(P, parameter_count(module), dtype=dtype)
    policy = BatchedPolicy(module)
    policy.set_parameters(params)
    return policy, module, params


def _loop(module: nn.Module, params: torch.Tensor, obs: torch.Tensor) -> np.ndarray:
    with torch.no_grad():
        rows = [vector_to_module(module, p)(o) for p, o in zip(params, obs, strict=True)]
    return torch.stack(rows).numpy()


def torch_matmuls(policy: BatchedPolicy, obs: torch.Tensor, monkeypatch) -> int:
    """Batched torch matmuls one call of ``policy`` runs (the host path runs numpy's)."""
    calls = []
    for name in ("bmm", "baddbmm"):
        original = getattr(torch, name)
        monkeypatch.setattr(torch, name, lambda *args, _op=original, **kwargs: (
            calls.append(_op), _op(*args, **kwargs))[1])
    policy(obs)
    monkeypatch.undo()
    return len(calls)


@pytest.mark.parametrize("spec", [
    "Linear(obs_length, act_length)",  # few outputs: the einsum product
    "Linear(obs_length, 16) >> Tanh() >> Linear(16, act_length)",  # both products
    "Linear(obs_length, 8, bias=False) >> ReLU() >> Identity() >> Linear(8, 8)",
    "Linear(obs_length, 8) >> ELU() >> Clip(-0.5, 0.5) >> Linear(8, act_length)",
])
def test_host_path_matches_loop_for_arrays_and_tensors(spec, monkeypatch):
    policy, module, params = _policy(spec)
    obs = torch.randn(P, OBS)
    assert torch_matmuls(policy, obs, monkeypatch) == 0
    expected = _loop(module, params, obs)
    out = policy(obs.numpy())
    assert isinstance(out, np.ndarray) and out.dtype == np.float32
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    tensor_out = policy(obs)
    assert isinstance(tensor_out, torch.Tensor)
    np.testing.assert_allclose(tensor_out.numpy(), expected, rtol=1e-5, atol=1e-5)


def test_host_path_follows_float64_params():
    policy, module, params = _policy("Linear(obs_length, 16) >> Tanh() >> Linear(16, 2)",
                                     dtype=torch.float64)
    obs = torch.randn(P, OBS)
    out = policy(obs.numpy())  # float32 observations, float64 policy
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, _loop(module.double(), params, obs.double()), rtol=1e-12)


@pytest.mark.parametrize("spec", [
    "Linear(obs_length, 8) >> GELU() >> Linear(8, act_length)",  # needs erf: numpy has none
    "RNN(obs_length, 4) >> Linear(4, act_length)",  # recurrent
])
def test_other_networks_take_arrays_through_torch(spec, monkeypatch):
    policy, module, params = _policy(spec)
    obs = torch.randn(P, OBS)
    assert torch_matmuls(policy, obs.numpy(), monkeypatch) > 0
    policy.reset()
    out = policy(obs.numpy())
    assert isinstance(out, np.ndarray)
    if not policy.is_recurrent:
        np.testing.assert_allclose(out, _loop(module, params, obs), rtol=1e-5, atol=1e-5)


def test_a_hooked_layer_keeps_its_hook():
    policy, module, params = _policy("Linear(obs_length, 8) >> Tanh() >> Linear(8, 2)")
    module[1].register_forward_hook(lambda mod, args, out: out * 0.0)
    policy.set_parameters(params)  # the host path is chosen here: not with a hook
    bias = params[:, -2:].numpy()  # the hook zeroes the hidden layer: outputs are the biases
    np.testing.assert_allclose(policy(torch.randn(P, OBS)).numpy(), bias, rtol=1e-6)


def test_call_under_grad_returns_no_graph():
    policy, _, _ = _policy("Linear(obs_length, 8) >> ELU() >> Linear(8, 2)")
    obs = torch.randn(P, OBS, requires_grad=True)
    assert not policy(obs).requires_grad
