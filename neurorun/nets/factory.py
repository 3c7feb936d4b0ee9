"""``make_network``: a policy module from a network string or a user's ``pkg.module:Name``."""

from __future__ import annotations

import difflib
import importlib
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from torch import nn

from neurorun.nets.parser import parse_network


def is_import_path(spec: str) -> bool:
    """True for ``"pkg.module:Name"``: dotted identifiers, a colon, an identifier."""
    module, colon, attribute = spec.strip().partition(":")
    return bool(colon) and attribute.isidentifier() and all(
        part.isidentifier() for part in module.split(".")
    )


def import_object(spec: str) -> Any:
    """The object named by ``"pkg.module:Name"``.

    Raises:
        ImportError: the module cannot be imported.
        AttributeError: the module has no such attribute (with close names).
    """
    module_name, _, attribute = spec.strip().partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ImportError(
            f"network {spec!r}: cannot import module {module_name!r} ({error}); check the "
            "spelling and that it is installed or on PYTHONPATH"
        ) from error
    if not hasattr(module, attribute):
        names = [n for n in dir(module) if not n.startswith("_")]
        close = difflib.get_close_matches(attribute, names, n=3)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        raise AttributeError(f"network {spec!r}: module {module_name!r} has no attribute "
                             f"{attribute!r}{hint}")
    return getattr(module, attribute)


def _call_factory(factory: Callable[..., Any], sizes: dict[str, Any], args: dict) -> nn.Module:
    try:
        declared = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        declared = {}
    given = {k: v for k, v in sizes.items() if k in declared and k not in args}
    network = factory(**args, **given)
    if not isinstance(network, nn.Module):
        raise TypeError(f"network factory {factory!r} returned {type(network).__name__}; "
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
        ImportError, AttributeError: a ``pkg.module:Name`` that cannot be found.
    """
    args = dict(network_args or {})
    sizes = {"obs_length": obs_length, "act_length": act_length,
             "obs_space": obs_space, "act_space": act_space}
    if isinstance(spec, nn.Module):
        return _check_widths(spec)
    if isinstance(spec, str) and is_import_path(spec):
        return _check_widths(_call_factory(import_object(spec), sizes, args))
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
