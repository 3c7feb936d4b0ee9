"""Parameter vectors: the documented order and exact round trips."""

from __future__ import annotations

import pytest
import torch

from neurorun.nets import (
    module_to_vector,
    parameter_count,
    parse_network,
    vector_to_module,
)

NET = "Linear(3, 2) >> Tanh() >> Linear(2, 1) >> GRU(1, 2)"


def test_count_and_order_are_parameters_in_order_flattened_by_rows():
    net = parse_network(NET)
    assert parameter_count(net) == (3 * 2 + 2) + (2 * 1 + 1) + (6 * 1 + 6 * 2 + 6 + 6)
    vector = torch.arange(float(parameter_count(net)))
    built = vector_to_module(net, vector)
    assert built[0].weight.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert built[0].bias.tolist() == [6.0, 7.0]
    assert built[2].weight.tolist() == [[8.0, 9.0]]
    assert built[2].bias.tolist() == [10.0]
    assert built[3].weight_ih[0, 0].item() == 11.0
    assert built[3].bias_hh[-1].item() == parameter_count(net) - 1


def test_round_trip_is_exact():
    torch.manual_seed(0)
    net = parse_network(NET)
    vector = torch.randn(parameter_count(net))
    assert torch.equal(module_to_vector(vector_to_module(net, vector)), vector)
    original = module_to_vector(net)
    assert torch.equal(module_to_vector(vector_to_module(net, original)), original)


def test_template_is_untouched_and_memory_not_shared():
    net = parse_network(NET)
    before = module_to_vector(net)
    vector = torch.zeros(parameter_count(net))
    built = vector_to_module(net, vector)
    vector += 1
    assert torch.equal(module_to_vector(net), before)
    assert torch.equal(module_to_vector(built), torch.zeros(parameter_count(net)))


def test_dtype_follows_the_vector():
    net = parse_network("Linear(2, 2)")
    vector = torch.randn(6, dtype=torch.float64)
    built = vector_to_module(net, vector)
    assert built.weight.dtype == torch.float64
    assert torch.equal(module_to_vector(built), vector)


def test_wrong_length_is_named():
    with pytest.raises(ValueError, match="expected a 1-D vector of 6 values"):
        vector_to_module(parse_network("Linear(2, 2)"), torch.zeros(7))
