"""``make_network``: the policy module that ``network.spec`` names, a network string or a
user's ``pkg.module:Name`` (a factory: a function or class returning a torch module)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from torch import nn

from neurorun.common.user_code import import_object, is_import_path
from neurorun.nets.parser import parse_network


class NetworkFactoryError(TypeError):
    """A ``pkg.module:Name`` network that is not a factory of torch modules."""


class NetworkImportError(ImportError):
    """A ``pkg.module:Name`` network whose module or name cannot be imported."""


def _call_factory(factory: Callable[..., Any], sizes: dict[str, Any], args: dict) -> nn.Module:
    if not callable(factory):
        raise NetworkFactoryError(f"network factory {factory!r} is a {type(factory).__name__}, "
                                  "not a function or class returning a torch.nn.Module")
    try:
        declared = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        declared = {}
    given = {k: v for k, v in sizes.items() if k in declared and k not in args}
    network = factory(**args, **given)
    if not isinstance(network, nn.Module):
        raise NetworkFactoryError(f"network factory {factory!r} returned {type(network).__name__}; "
                        "expected a torch.nn.Module")
    return network


def make_network(
    spec: str | Callable[..., nn.Module] | nn.Module,
    *,
    obs_length: int,
    act_length: int,
    obs_space: Any = None,
    act_space: Any = None,
    network_args: Mapping[str, Any] | None = None,
) -> nn.Module:
    """Build the policy module.

    Args:
        spec: a network string (see :mod:`neurorun.nets.parser`), ``"pkg.module:Name"`` naming
            a module class or factory, such a callable itself, or a ready ``nn.Module``
            (returned as is).
        obs_length, act_length: sizes of an observation and an action.
        obs_space, act_space: the gymnasium spaces, when known.
        network_args: constants for a network string; keyword arguments for a factory, which
            also receives whichever of obs_length, act_length, obs_space and act_space its
            signature declares.

    Raises:
        NetworkParseError: a malformed network string.
        NetworkImportError: a ``pkg.module:Name`` that cannot be imported.
    """
    args = dict(network_args or {})
    sizes = {"obs_length": obs_length, "act_length": act_length,
             "obs_space": obs_space, "act_space": act_space}
    if isinstance(spec, nn.Module):
        return _check_widths(spec)
    if isinstance(spec, str) and is_import_path(spec):
        try:
            factory = import_object(spec, "network")
        except ImportError as error:
            raise NetworkImportError(str(error)) from error
        return _check_widths(_call_factory(factory, sizes, args))
    if callable(spec):
        return _check_widths(_call_factory(spec, sizes, args))
    shapes = {
        "obs_shape": tuple(getattr(obs_space, "shape", None) or (obs_length,)),
        "act_shape": tuple(getattr(act_space, "shape", None) or (act_length,)),
    }
    return _check_widths(parse_network(spec, **{"obs_length": obs_length,
                                                "act_length": act_length, **shapes, **args}))


def _check_widths(module: nn.Module) -> nn.Module:
    """ValueError for a layer of width 0: it runs, but no signal passes it (nothing to learn)."""
    for name, parameter in module.named_parameters():
        if 0 in parameter.shape:
            raise ValueError(f"parameter {name!r} of the network has shape "
                             f"{tuple(parameter.shape)}: a layer of width 0 passes no signal. "
                             "Fix: give every layer a width >= 1")
    return module
