"""make_network: network strings, user modules by dotted path, and their errors."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from torch import nn

from neurorun.nets import NetworkParseError, make_network

from . import user_policies

USER = user_policies.__name__


def test_string_with_network_args_and_shapes():
    net = make_network("Linear(obs_shape[0], hidden) >> Tanh() >> Linear(hidden, act_length)",
                       obs_length=5, act_length=2, obs_space=SimpleNamespace(shape=(5,)),
                       network_args={"hidden": 9})
    assert (net[0].in_features, net[0].out_features, net[2].out_features) == (5, 9, 2)


def test_user_class_receives_the_sizes_it_declares():
    net = make_network(f"{USER}:ResidualPolicy", obs_length=5, act_length=2,
                       network_args={"hidden": 4})
    assert isinstance(net, user_policies.ResidualPolicy)
    assert net.inp.weight.shape == (4, 5) and net.out.weight.shape == (2, 4)


def test_user_factory_receives_the_space():
    net = make_network(f"{USER}:space_factory", obs_length=3, act_length=2,
                       obs_space=SimpleNamespace(shape=(3,)), network_args={"scale": 0.5})
    assert net.weight.shape == (2, 3)
    assert net.weight.eq(0.5).all()


def test_callables_and_modules_are_accepted():
    ready = nn.Linear(3, 2)
    assert make_network(ready, obs_length=3, act_length=2) is ready
    made = make_network(user_policies.ResidualPolicy, obs_length=3, act_length=1)
    assert made(torch.zeros(3)).shape == (1,)


def test_import_failure_is_explained():
    with pytest.raises(ImportError, match="cannot import module 'no_such_pkg.policies'"):
        make_network("no_such_pkg.policies:Net", obs_length=3, act_length=2)


def test_missing_attribute_names_close_matches():
    with pytest.raises(ImportError, match="did you mean ResidualPolicy"):
        make_network(f"{USER}:ResidualPolicyy", obs_length=3, act_length=2)


def test_factory_must_return_a_module():
    with pytest.raises(TypeError, match="expected a torch.nn.Module"):
        make_network(f"{USER}:not_a_module", obs_length=3, act_length=2)


def test_network_string_errors_propagate():
    with pytest.raises(NetworkParseError, match="did you mean hidden"):
        make_network("Linear(obs_length, hiden)", obs_length=3, act_length=2,
                     network_args={"hidden": 4})


@pytest.mark.parametrize("spec", ["Linear(obs_length, 0) >> Linear(0, act_length)",
                                  "Linear(obs_length, 8) >> Linear(8, 0) >> Linear(0, act_length)"])
def test_a_zero_width_layer_is_refused(spec):
    with pytest.raises(ValueError, match="shape .*0.*a layer of width 0 passes no signal"):
        make_network(spec, obs_length=4, act_length=2)
