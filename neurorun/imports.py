"""`pkg.module:Name` strings: user code named in a config (a network factory, an env factory)."""

from __future__ import annotations

import difflib
import importlib
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
        ImportError: the module cannot be imported.
        AttributeError: the module has no such attribute (with close names).
    """
    module_name, _, attribute = spec.strip().partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ImportError(
            f"{what} {spec!r}: cannot import module {module_name!r} ({error}); check the "
            "spelling and that it is installed or on PYTHONPATH"
        ) from error
    if not hasattr(module, attribute):
        names = [n for n in dir(module) if not n.startswith("_")]
        close = difflib.get_close_matches(attribute, names, n=3)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        raise AttributeError(f"{what} {spec!r}: module {module_name!r} has no attribute "
                             f"{attribute!r}{hint}")
    return getattr(module, attribute)
