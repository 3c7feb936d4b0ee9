"""BatchedPolicy against a plain loop over P single modules built with vector_to_module."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.func
from torch import nn

from neurorun.nets import BatchedPolicy, make_network, parameter_count, vector_to_module

from . import user_policies

OBS, ACT, P = 7, 3, 6
USER = user_policies.__name__


def _build(spec: str, **network_args) -> nn.Module:
    torch.manual_seed(0)
    return make_network(spec, obs_length=OBS, act_length=ACT, network_args=network_args)


def _population(module: nn.Module, dtype=torch.float32) -> torch.Tensor:
    return 0.5 * torch.randn(P, parameter_count(module), dtype=dtype)


def _assert_matches_loop(module: nn.Module) -> BatchedPolicy:
    """The batched output equals a loop over single modules built with vector_to_module."""
    params, obs = _population(module), torch.randn(P, OBS)
    policy = BatchedPolicy(module)
    policy.set_parameters(params)
    expected = torch.stack([vector_to_module(module, p)(o)
                            for p, o in zip(params, obs, strict=True)])
    torch.testing.assert_close(policy(obs), expected, rtol=1e-5, atol=1e-5)
    with torch.no_grad():  # the torch steps too, which CPU calls skip for the numpy host path
        torch.testing.assert_close(policy._forward(obs), expected, rtol=1e-5, atol=1e-5)
    return policy


FEED_FORWARD = [
    "Linear(obs_length, 16) >> Tanh() >> Linear(16, act_length)",
    "Linear(obs_length, 8, bias=False) >> ELU() >> LayerNorm(8) >> Linear(8, 8) >> Softmax(dim=-1)"
    " >> Apply('x * 3 + 1') >> Clip(1.1, 1.9) >> Slice(1, 4)",
    "Linear(obs_length, 8) >> LeakyReLU(0.2) >> Linear(8, act_length) >> Bin(-1, 1)",
]


@pytest.mark.parametrize("spec", FEED_FORWARD)
def test_feed_forward_fast_path_matches_loop(spec, monkeypatch):
    def no_vmap(*args, **kwargs):
        raise AssertionError("the fast path should not fall back to vmap")

    monkeypatch.setattr(torch.func, "vmap", no_vmap)
    assert not _assert_matches_loop(_build(spec)).is_recurrent


@pytest.mark.parametrize(
    "spec",
    [
        f"{USER}:ResidualPolicy",  # a user module: functional_call + vmap
        "Linear(obs_length, 8) >> PReLU() >> Linear(8, act_length)",  # PReLU: vmap member
    ],
)
def test_fallback_matches_loop(spec):
    module = _build(spec, **({"hidden": 5} if "Residual" in spec else {}))
    _assert_matches_loop(module)


def test_nested_sequential_is_flattened():
    torch.manual_seed(0)
    module = nn.Sequential(nn.Sequential(nn.Linear(OBS, 5), nn.Tanh()), nn.Linear(5, ACT))
    _assert_matches_loop(module)


def test_tied_parameters_fall_back_to_vmap_of_the_whole_module():
    torch.manual_seed(0)
    shared, tied = nn.Linear(OBS, OBS), nn.Linear(OBS, OBS)
    tied.weight = shared.weight  # a parameter shared by two modules
    module = nn.Sequential(shared, nn.Tanh(), shared, tied, nn.Linear(OBS, ACT))  # and a module
    assert parameter_count(module) == OBS * OBS + 2 * OBS + OBS * ACT + ACT
    _assert_matches_loop(module)


RECURRENT = [
    "Linear(obs_length, 8) >> Tanh() >> LSTM(8, 6) >> GRU(6, 5) >> RNN(5, 4)"
    " >> Linear(4, act_length)",
    "RNN(obs_length, 4, nonlinearity='relu')",
    f"{USER}:LeakyMemory",  # a user recurrent module: vmap with state
]


@pytest.mark.parametrize("spec", RECURRENT)
def test_recurrent_matches_stepping_single_modules_with_resets(spec):
    module = _build(spec)
    params = _population(module)
    policy = BatchedPolicy(module)
    policy.set_parameters(params)
    assert policy.is_recurrent
    singles = [vector_to_module(module, p) for p in params]
    hidden = [None] * P
    generator = torch.Generator().manual_seed(3)
    for step in range(6):
        obs = torch.randn(P, OBS, generator=generator)
        if step in (2, 4):
            mask = torch.rand(P, generator=generator) < 0.5
            mask[0], mask[1] = True, False  # at least one reset row and one kept row
            policy.reset(mask)
            hidden = [None if m else h for m, h in zip(mask.tolist(), hidden, strict=True)]
        expected = []
        for i, single in enumerate(singles):
            y, hidden[i] = single(obs[i], hidden[i])
            expected.append(y)
        torch.testing.assert_close(policy(obs), torch.stack(expected), rtol=1e-5, atol=1e-5)


def test_set_parameters_zeroes_state_and_reset_all():
    module = _build("GRU(obs_length, act_length)")
    params, obs = _population(module), torch.randn(P, OBS)
    policy = BatchedPolicy(module)
    policy.set_parameters(params)
    first = policy(obs)
    assert not torch.allclose(policy(obs), first)  # the state moved on
    policy.set_parameters(params)
    torch.testing.assert_close(policy(obs), first)
    policy.reset()
    torch.testing.assert_close(policy(obs), first)


def test_dtype_follows_params():
    module = _build("Linear(obs_length, act_length)")
    policy = BatchedPolicy(module)
    params = _population(module, torch.float64)
    policy.set_parameters(params)
    obs = torch.randn(P, OBS)
    actions = policy(obs)
    assert actions.dtype == torch.float64
    weights, biases = params[:, : OBS * ACT].numpy(), params[:, OBS * ACT :].numpy()
    expected = np.einsum("poi,pi->po", weights.reshape(P, ACT, OBS), obs.double().numpy()) + biases
    np.testing.assert_allclose(actions.numpy(), expected, rtol=1e-12)


def test_shape_errors_are_named():
    policy = BatchedPolicy(_build("Linear(obs_length, act_length)"))
    with pytest.raises(RuntimeError, match="set_parameters"):
        policy(torch.zeros(P, OBS))
    with pytest.raises(ValueError, match=r"expected \(P, 24\)"):
        policy.set_parameters(torch.zeros(P, 25))
    policy.set_parameters(torch.zeros(P, 24))
    with pytest.raises(ValueError, match="obs has 2 rows"):
        policy(torch.zeros(2, OBS))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("spec", [FEED_FORWARD[0], RECURRENT[0], f"{USER}:ResidualPolicy"])
def test_cuda_matches_cpu(spec):
    module = _build(spec)
    params, obs = _population(module), torch.randn(P, OBS)
    cpu, gpu = BatchedPolicy(module), BatchedPolicy(module)
    cpu.set_parameters(params)
    gpu.set_parameters(params.cuda())
    for _ in range(3):
        expected, got = cpu(obs), gpu(obs.cuda())
        assert got.device.type == "cuda"
        torch.testing.assert_close(got.cpu(), expected, rtol=1e-4, atol=1e-4)
