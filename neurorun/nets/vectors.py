"""A module's parameters as one flat vector, and back.

The order is fixed: ``module.parameters()`` in registration order, each tensor flattened
row-major, concatenated; the same as ``torch.nn.utils.parameters_to_vector``. For
``Linear(3, 2) >> Tanh() >> Linear(2, 1)`` that is ``[W0 (2x3 by rows), b0 (2), W1 (1x2), b1]``.
"""

from __future__ import annotations

import copy

import torch
from torch import Tensor, nn


def parameter_count(module: nn.Module) -> int:
    """Number of scalar parameters of ``module`` (the length of its vector)."""
    return sum(p.numel() for p in module.parameters())


def module_to_vector(module: nn.Module) -> Tensor:
    """A detached copy of the parameters of ``module`` as one 1-D tensor."""
    parameters = list(module.parameters())
    if not parameters:
        return torch.zeros(0)
    return torch.nn.utils.parameters_to_vector(parameters).detach().clone()


def vector_to_module(module: nn.Module, vector: Tensor) -> nn.Module:
    """A deep copy of ``module`` holding the parameters in ``vector``; ``module`` is unchanged.

    The copy takes the dtype and device of ``vector`` (when it is floating point), so a round
    trip ``module_to_vector(vector_to_module(m, v))`` gives ``v`` back bit for bit.

    Raises:
        ValueError: ``vector`` is not 1-D of length ``parameter_count(module)``.
    """
    vector = torch.as_tensor(vector)
    expected = parameter_count(module)
    if vector.dim() != 1 or vector.numel() != expected:
        raise ValueError(
            f"vector of shape {tuple(vector.shape)} does not fit the module: expected a 1-D "
            f"vector of {expected} values (parameter_count of the module)"
        )
    result = copy.deepcopy(module)
    if vector.is_floating_point():
        result = result.to(device=vector.device, dtype=vector.dtype)
    parameters = list(result.parameters())
    values = vector.detach().clone()  # the module must not share memory with the caller's vector
    if parameters:
        torch.nn.utils.vector_to_parameters(values.to(parameters[0]), parameters)
    return result
