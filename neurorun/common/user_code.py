"""`pkg.module:Name` strings: user code named in a config (a network factory, an env factory).

Code named in a file neurorun reads (a checkpoint's `.json`, a run folder's saved config) is
imported only when the user says so on the command line (`names_code`, `refuse_untrusted`):
importing a module runs its top-level code.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Mapping
from typing import Any


def is_import_path(spec: str) -> bool:
    """True for ``"pkg.module:Name"``: dotted identifiers, a colon, an identifier."""
    module, colon, attribute = spec.strip().partition(":")
    return bool(colon) and attribute.isidentifier() and all(
        part.isidentifier() for part in module.split(".")
    )


def import_object(spec: str, what: str) -> Any:
    """The object named by ``"pkg.module:Name"``; ``what`` (network, env) names it in errors.

    Raises:
        ImportError: the module cannot be imported, or has no such attribute (with close
            names), as Python's ``from module import Name``.
    """
    module_name, _, attribute = spec.strip().partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ImportError(
            f"{what} {spec!r}: cannot import module {module_name!r} ({error}). Fix: check "
            "the spelling, and that it is installed or on PYTHONPATH"
        ) from error
    if not hasattr(module, attribute):
        names = [n for n in dir(module) if not n.startswith("_")]
        close = difflib.get_close_matches(attribute, names, n=3)
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        raise ImportError(f"{what} {spec!r}: module {module_name!r} has no attribute "
                          f"{attribute!r}{hint}. Fix: check the spelling")
    return getattr(module, attribute)


class UntrustedCodeError(ValueError):
    """Code named in a file (a checkpoint's .json, a saved config) that the user has not said
    to trust on the command line."""


def names_code(spec: Any, what: str) -> bool:
    """Whether building ``spec`` imports a module, whose top-level code then runs.

    ``what`` is "network" (a ``pkg.module:Name`` factory; a network-language string imports
    nothing) or "env" (a ``pkg.module:factory``, or a gymnasium id ``module:Name-v0``, for
    which gymnasium imports ``module`` first; EnvPool, brax and Playground names are looked up
    in their registries)."""
    if not isinstance(spec, str):
        return False
    if what == "network":
        return is_import_path(spec)
    prefix, sep, name = spec.strip().partition("::")
    return ":" in name if sep and prefix == "gym" else not sep and ":" in spec


# keys of a run's config whose value makes neurorun run code: each with its test of the value
CODE_KEYS: dict[str, Callable[[Any], bool]] = {
    "network.spec": lambda value: names_code(value, "network"),
    "env.id": lambda value: names_code(value, "env"),
    # ray installs packages, imports setup hooks and modules named in a runtime_env
    "parallel.actor_config.runtime_env": bool,
    # a ray cluster's replies are unpickled in this process ("auto": the one on this machine)
    "parallel.address": lambda value: value not in (None, "", "auto"),
    # an MLflow server is sent the run's config and metrics, with this process's
    # MLFLOW_TRACKING_TOKEN or password, and its plugins' URI schemes import code (null: a
    # database in the run folder)
    "logger.mlflow.tracking_uri": lambda value: value is not None,
}


def code_in_config(config: Any) -> dict[str, Any]:
    """The keys of ``config`` (an OmegaConf config) that name code (``CODE_KEYS``), with
    their values."""
    from omegaconf import OmegaConf

    named = {}
    for key, runs_code in CODE_KEYS.items():
        value = OmegaConf.select(config, key, default=None, throw_on_missing=False)
        if OmegaConf.is_config(value):
            value = OmegaConf.to_container(value)
        if runs_code(value):
            named[key] = value
    return named


def refuse_untrusted(named: Mapping[str, Any], source: Any, opt_in: str) -> None:
    """UntrustedCodeError (one line) when ``named`` (key -> the code it names, read from the
    file ``source``) is not empty; ``opt_in`` says how the user trusts it."""
    if named:
        listed = ", ".join(f"{key}={value!r}" for key, value in named.items())
        raise UntrustedCodeError(
            f"{str(source)!r} names code to run or a server to contact ({listed}), and "
            f"loading it would run that code or send that server this run's data: not loaded. "
            f"If you trust where the file came from, {opt_in}")
