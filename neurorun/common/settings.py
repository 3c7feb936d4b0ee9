"""Config sections declared as dataclasses, each field's range beside it (`setting`), and the one
check that turns a plain mapping of YAML values into such a section (`load_section`).

    @dataclass(frozen=True)
    class RestartConfig:
        patience: int | None = setting(None, ge=1)
        strategy: str = setting("same", choices=("same", "ipop", "bipop"))

    load_section(RestartConfig, {"patience": 3}, "restart")   # RestartConfig(3, "same")

Values are taken as YAML writes them, strictly: text is never a number or a bool (`no` would be
a truthy string), a bool is never a number, an int is a float, numbers are finite. A key the
section does not declare is refused with the closest declared one; a key it lacks gets its
default (a config saved before the key existed). OmegaConf's structured configs coerce `no` to
false and `3` to 3 and type no union with a list or a range, so this check is written here once,
for the run's config sections and the algorithms' options alike.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from neurorun.common.errors import ConfigError
from neurorun.common.values import is_int, is_number

_NO_DEFAULT: Any = dataclasses.MISSING


def setting(default: Any = _NO_DEFAULT, *, factory: Callable[[], Any] | None = None,
            ge: float | None = None, gt: float | None = None, le: float | None = None,
            choices: Sequence[Any] | None = None,
            rule: Callable[[Any], Any] | None = None,
            loader: Callable[[Any, str], Any] | None = None) -> Any:
    """A dataclass field whose range sits beside it: ``ge``/``gt``/``le`` bound a number,
    ``choices`` lists the values it takes, ``rule(value)`` raises a ValueError for what the type
    cannot say, null included (its message names the field as ``name=``, written as the whole
    key in the ConfigError; a field typed ``Any`` leaves every check of its value to the rule);
    ``loader(raw, path)`` builds a section whose keys are known only at run time (the chosen
    algorithm's options, the loggers' rows)."""
    metadata = {"ge": ge, "gt": gt, "le": le, "choices": choices, "rule": rule,
                "loader": loader}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def load_section(cls: type, raw: Any, path: str = "") -> Any:
    """``cls`` (a dataclass of settings) from ``raw``, a plain mapping of YAML values (None: all
    defaults); ``path`` is where the section sits in the config (``problem``).

    Raises:
        ConfigError: naming the key, the value, what it takes and the fix.
    """
    prefix = f"{path}." if path else ""
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise mapping_expected(path, raw)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    for key, value in raw.items():
        if key not in fields:
            raise unknown_key(f"{prefix}{key}", value, fields)
    hints = typing.get_type_hints(cls)
    values = {}
    for name, spec in fields.items():
        value, hint = raw.get(name), hints[name]
        if spec.metadata.get("loader") is not None:
            values[name] = spec.metadata["loader"](value, f"{prefix}{name}")
        elif name not in raw:
            continue
        elif dataclasses.is_dataclass(hint):
            values[name] = load_section(hint, value, f"{prefix}{name}")
        else:
            values[name] = check_value(f"{prefix}{name}", value, hint, spec.metadata)
    return cls(**values)


def check_value(key: str, value: Any, hint: Any, limits: Mapping[str, Any]) -> Any:
    """``value`` of config key ``key``, checked against its type ``hint`` and ``limits`` (a
    `setting`'s metadata); returns it as YAML wrote it (an int where a number belongs stays an
    int, as messages show it; a rule's own result is not kept)."""
    choices = limits.get("choices")
    if choices is not None and value not in choices and not (value is None and _optional(hint)):
        raise ConfigError(f"{key}={value!r}: expected one of {', '.join(map(str, choices))}. "
                          f"Fix: {key}={choices[0]}.")
    if typing.get_origin(hint) in (dict, Mapping) and not isinstance(value, Mapping):
        raise mapping_expected(key, value)
    rule = limits.get("rule")
    if rule is not None and not fits(value, hint):  # its message says what the key takes
        _apply(rule, key, value)
    if not accepts(value, hint, limits):
        said = wanted(hint, limits)
        optional = " or null" if _optional(hint) and "null" not in said else ""
        values = [word for word in _words(hint) if word != "null"]
        if values and not any(word.startswith(("a ", "an ")) for word in values):
            fix = " or ".join([f"{key}={word}" for word in values])  # key=true or key=false
        else:
            fix = (f"{key}=<{said.removeprefix('a ').removeprefix('an ')}>"
                   + (f" or {key}=null" if optional else ""))
        raise ConfigError(f"{key}={value!r}: expected {said}{optional}. Fix: {fix}.")
    if rule is not None:  # None too: only the rule knows whether it takes null
        _apply(rule, key, value)
    return value


def _apply(rule: Callable[[Any], Any], key: str, value: Any) -> None:
    """``rule(value)``; its ValueError as a ConfigError, the field's name written as ``key``."""
    try:
        rule(value)
    except ValueError as error:
        section, _, name = key.rpartition(".")
        raise ConfigError(as_keys(str(error), [name], section)) from None


def as_keys(message: str, names: Iterable[str], section: str) -> str:
    """``message`` (a part's, which names its options ``name=``) with each of ``names`` written
    as the config key ``section.name=`` (a longer name first: ``num_actors`` is no ``actors``)."""
    for name in sorted(names, key=len, reverse=True):
        message = re.sub(rf"(?<![\w.]){re.escape(name)}=",
                         f"{section}.{name}=" if section else f"{name}=", message)
    return message


def accepts(value: Any, hint: Any, limits: Mapping[str, Any]) -> bool:
    """Whether ``value`` has the type ``hint`` and lies in ``limits`` (its rule not asked)."""
    return fits(value, hint) and (hint is Any or not is_number(value)
                                  or _within(value, limits))


def _within(value: float, limits: Mapping[str, Any]) -> bool:
    ge, gt, le = limits.get("ge"), limits.get("gt"), limits.get("le")
    return (is_int(value) or math.isfinite(value)) and (ge is None or value >= ge) and (
        gt is None or value > gt) and (le is None or value <= le)


def wanted(hint: Any, limits: Mapping[str, Any]) -> str:
    """What ``hint`` and ``limits`` take, in words: "an integer >= 1", "a finite number > 0"."""
    ge, gt, le = limits.get("ge"), limits.get("gt"), limits.get("le")
    low, sign = (ge, ">=") if ge is not None else (gt, ">")
    if low is not None and le is not None:
        bound = (f" in [{_bound_text(low)}, {_bound_text(le)}]" if sign == ">="
                 else f" > {_bound_text(low)} and at most {_bound_text(le)}")
    else:
        bound = (f" {sign} {_bound_text(low)}" if low is not None
                 else f" at most {_bound_text(le)}" if le is not None else "")
    kinds = _kinds(hint)
    if kinds == [int]:
        return "an integer" + bound
    if kinds == [float]:
        return "a finite number" + bound
    return kind(hint)


def _bound_text(bound: float) -> str:
    return str(bound) if isinstance(bound, int) else f"{bound:g}"


def _kinds(hint: Any) -> list[Any]:
    return [arg for arg in _members(hint) if arg is not type(None)]


def _members(hint: Any) -> tuple[Any, ...]:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return typing.get_args(hint)
    return (hint,)


def _optional(hint: Any) -> bool:
    return type(None) in _members(hint)


def mapping_expected(path: str, value: Any) -> ConfigError:
    """A list or a value where the config declares a section or an open mapping."""
    return ConfigError(f"{path}={value!r}: expected a mapping of keys to values there. Fix: "
                       f"{path}={{key: value}} (`neurorun --cfg job` shows the config).")


def unknown_key(key: str, value: Any, known: typing.Iterable[str]) -> ConfigError:
    """A key no section declares (it would be ignored), with the closest declared one."""
    section, _, name = key.rpartition(".")
    close = difflib.get_close_matches(name, list(known), n=1)
    hint = f" (did you mean {f'{section}.' if section else ''}{close[0]}?)" if close else ""
    return ConfigError(f"{key}={value!r}: no such key, so it would be ignored{hint}. "
                       "Fix: check the spelling (`neurorun --cfg job` shows every key).")


# What a config can hold (YAML's types), checked against a type hint; other values (numpy
# arrays, tensors from Python callers) are left to the part's own checks.
_PLAIN = (bool, int, float, str, list, tuple, Mapping, type(None))


def fits(value: Any, hint: Any) -> bool:
    """Whether a plain ``value`` is of type ``hint`` (text where a number or a bool belongs
    is not: `float("no")` fails late, `bool("no")` is True)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if not isinstance(value, _PLAIN) or hint is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(fits(value, arg) for arg in args)
    if hint is int:
        return is_int(value)
    if hint is float:  # an int is a float here, as in YAML
        return is_number(value)
    if origin in (list, tuple):
        return isinstance(value, list | tuple) and all(fits(v, args[0]) for v in value)
    if origin is not None:  # dict[str, Any], Mapping[str, Any]
        return isinstance(value, Mapping if origin in (dict, Mapping) else origin)
    return isinstance(value, hint)


def kind(hint: Any) -> str:
    """``hint`` in words: "a number or a list of numbers or null"."""
    return " or ".join(_words(hint))


def _words(hint: Any) -> list[str]:
    words = {bool: ("true", "false"), int: ("an integer",), float: ("a number",),
             str: ("a string",), type(None): ("null",), list: ("a list of numbers",),
             Mapping: ("a mapping",), dict: ("a mapping",)}
    said: list[str] = []
    for arg in _members(hint):
        said += words.get(typing.get_origin(arg) or arg, ())
    return list(dict.fromkeys(said))
