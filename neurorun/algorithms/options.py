"""Option groups shared by the algorithms, and turning flat keyword options into them.

Configs and `make_algorithm` pass options as one flat mapping (`stdev_init=0.1,
center_learning_rate=0.5, ...`); each algorithm declares an options dataclass whose fields
are either plain options or one of the groups below, and `options_from_flat` fills it.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from neurorun.common.settings import fits
from neurorun.common.settings import kind as kind_of
from neurorun.common.values import is_int

Vector = float | list[float] | tuple[float, ...] | torch.Tensor


@dataclass(frozen=True)
class StartOptions:
    """Where the search distribution starts."""

    center_init: Vector | None = None  # None: the origin
    stdev_init: Vector | None = None  # exclusive with radius_init
    radius_init: float | None = None  # radius r means stdev r / sqrt(D)


@dataclass(frozen=True)
class StdevLimits:
    """Bounds on the standard deviation after each update."""

    stdev_min: Vector | None = None
    stdev_max: Vector | None = None
    stdev_max_change: Vector | None = None  # largest relative change per generation, in (0, 1)


@dataclass(frozen=True)
class AdaptivePopsize:
    """Adaptive population size (Salimans et al. 2017; Toklu et al. 2020)."""

    num_interactions: int | None = None  # keep asking until a generation made this many
    popsize_max: int | None = None  # ... or another round would pass this many solutions


@dataclass(frozen=True)
class StepOptions:
    """How gradients are shaped and followed."""

    center_learning_rate: float | None = None
    stdev_learning_rate: float | None = None
    optimizer: str | None = None  # "clipup", "adam", "sgd" or None for plain steps
    optimizer_config: Mapping[str, Any] | None = None  # e.g. {"max_speed": 0.3}
    ranking_method: str | None = None  # see ranking.RANKINGS


@dataclass(frozen=True)
class NoiseOptions:
    """Where the samples' noise comes from (see neurorun.algorithms.noise)."""

    noise_source: str = "seeds"  # "seeds" (a generator per row) or "table" (a shared table)
    noise_table_size: int | None = None  # numbers in the table (noise_source="table")


def group(cls: type, **defaults: Any) -> Any:
    """A dataclass field holding the option group `cls`, with algorithm-specific defaults."""
    return field(default_factory=lambda: cls(**defaults), metadata={"group": cls})


@dataclass(frozen=True)
class SearchOptions:
    """Options every algorithm has; each algorithm's options dataclass extends this."""

    start: StartOptions = group(StartOptions)
    adaptive: AdaptivePopsize = group(AdaptivePopsize)
    sampling: NoiseOptions = group(NoiseOptions)


def options_from_flat(options_cls: type, flat: Mapping[str, Any]) -> Any:
    """Build `options_cls` from flat keyword options, routing each key to its group.

    Raises:
        ValueError: for a key no field of `options_cls` (or of its groups) accepts.
    """
    remaining = dict(flat)
    values: dict[str, Any] = {}
    for option in dataclasses.fields(options_cls):
        group_cls = option.metadata.get("group")
        if group_cls is None:
            if option.name in remaining:
                values[option.name] = remaining.pop(option.name)
            continue
        group_keys = {f.name for f in dataclasses.fields(group_cls)}
        given = {k: remaining.pop(k) for k in list(remaining) if k in group_keys}
        values[option.name] = dataclasses.replace(option.default_factory(), **given)
    if remaining:
        raise ValueError(_unknown_options_message(options_cls, remaining))
    hints = _flat_hints(options_cls)
    for key, value in flat.items():
        if not fits(value, hints[key]):
            kind = kind_of(hints[key])
            raise ValueError(f"{key}={value!r}: expected {kind}. Fix: {key}=<{kind}>.")
    return options_cls(**values)


@functools.cache
def _flat_hints(options_cls: type) -> dict[str, Any]:
    """The type of each flat option of `options_cls`: its own fields' and its groups'."""
    return {**typing.get_type_hints(options_cls),
            **{key: hint for option in dataclasses.fields(options_cls)
               if option.metadata.get("group") is not None
               for key, hint in typing.get_type_hints(option.metadata["group"]).items()}}


def option_names(options_cls: type) -> list[str]:
    """Every flat option name `options_cls` accepts."""
    names = []
    for option in dataclasses.fields(options_cls):
        group_cls = option.metadata.get("group")
        if group_cls is None:
            names.append(option.name)
        else:
            names.extend(f.name for f in dataclasses.fields(group_cls))
    return names


def _unknown_options_message(options_cls: type, unknown: Mapping[str, Any]) -> str:
    known = option_names(options_cls)
    parts = []
    for key, value in unknown.items():
        close = difflib.get_close_matches(key, known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        parts.append(f"{key}={value!r}{hint}")
    return (
        f"unknown option(s) {', '.join(parts)} for {options_cls.__name__}; "
        f"expected one of {sorted(known)}. Fix: remove or rename them."
    )


def as_numbers(value: Vector, name: str, dtype: torch.dtype = torch.float32,
               device: torch.device | str = "cpu") -> torch.Tensor:
    """A number or a list of numbers as a tensor (0-d or 1-d), whatever its length."""
    try:
        tensor = torch.as_tensor(value, dtype=dtype, device=device)
    except (TypeError, ValueError, RuntimeError):
        tensor = None
    if tensor is None or tensor.ndim > 1 or tensor.numel() == 0:
        raise ValueError(f"{name}={value!r}: expected a number or a list of numbers. Fix: "
                         f"e.g. {name}=0.5 or {name}=[0.5, 0.1, ...] (one per parameter).")
    return tensor


def as_vector(
    value: Vector, name: str, length: int, device: torch.device, dtype: torch.dtype
) -> torch.Tensor:
    """A scalar or length-`length` sequence of numbers as a (length,) tensor."""
    tensor = as_numbers(value, name, dtype, device)
    if tensor.ndim == 0:
        return tensor.expand(length).clone()
    if tensor.shape != (length,):
        raise ValueError(
            f"{name}=<{len(tensor)} values>: expected one value, or {length} (one per "
            f"parameter: the solution length). Fix: give one value or {length}."
        )
    return tensor.clone()


# The largest |center_init|, and of problem.initial_bounds (neurorun.problems.options): a
# weight beyond it times an observation, or squared, overflows float32, so the first
# generation could only diverge.
MAX_CENTER = 1e18


def check_center(start: StartOptions) -> None:
    """Raise a ValueError unless `center_init` is null or finite numbers within MAX_CENTER."""
    if start.center_init is not None:
        center = as_numbers(start.center_init, "center_init")
        if not bool(torch.all(center.abs() <= MAX_CENTER)):  # nan and inf too
            raise ValueError(f"center_init={start.center_init!r}; expected finite numbers "
                             f"within +-{MAX_CENTER:.0e}. Fix: e.g. center_init=0.0, or null "
                             "for the origin (a run: problem.initial_bounds).")


def check_initial_stdev(start: StartOptions) -> None:
    """Raise a ValueError unless exactly one of `stdev_init` and `radius_init` is given and it
    is a usable standard deviation."""
    if (start.stdev_init is None) == (start.radius_init is None):
        raise ValueError(
            f"got stdev_init={start.stdev_init!r} and radius_init={start.radius_init!r}; "
            "expected exactly one of them. Fix: set stdev_init (per-parameter stdev) or "
            "radius_init (stdev = radius / sqrt(D)), not both and not neither."
        )
    if start.radius_init is not None:
        require_positive("radius_init", start.radius_init)
        require_stdev("radius_init", start.radius_init, as_numbers(start.radius_init,
                                                                    "radius_init"))
    else:
        require_stdev("stdev_init", start.stdev_init, as_numbers(start.stdev_init,
                                                                  "stdev_init"))


def initial_center(start: StartOptions, length: int, device, dtype) -> torch.Tensor:
    """The (D,) initial center from a checked `center_init` (None: the origin)."""
    if start.center_init is None:
        return torch.zeros(length, device=device, dtype=dtype)
    return as_vector(start.center_init, "center_init", length, device, dtype)


def initial_stdev(start: StartOptions, length: int, device, dtype) -> torch.Tensor:
    """The (D,) initial standard deviation from a checked `stdev_init` or `radius_init`."""
    if start.radius_init is None:
        return as_vector(start.stdev_init, "stdev_init", length, device, dtype)
    stdev = as_vector(float(start.radius_init) / math.sqrt(length), "radius_init", length,
                      device, dtype)
    require_stdev("radius_init", start.radius_init, stdev)  # radius / sqrt(D) may round to 0
    return stdev


# The largest stdev (initial, or a bound): its square times a sample's squared noise (< 400)
# stays finite in float32 (3.4e38); a larger one overflows the update in generation 1.
MAX_STDEV = 1e18


def require_stdev(name: str, given: Any, stdev: torch.Tensor) -> None:
    """Raise a ValueError unless every entry of ``stdev`` (option ``name``, given as ``given``)
    is a usable standard deviation: > 0 (0 stops the search, < 0 is none) and <= MAX_STDEV."""
    if not bool(torch.all((stdev > 0) & (stdev <= MAX_STDEV))):
        per_parameter = ", or a list of such numbers (one per parameter)" if name in (
            "stdev_init", "stdev_min", "stdev_max") else ""
        raise ValueError(f"{name}={given!r}; expected a finite number > 0 and at most "
                         f"{MAX_STDEV:.0e} (a standard deviation) in each entry. Fix: e.g. "
                         f"{name}=0.1{per_parameter}.")


def require_positive(name: str, value: float | None) -> None:
    """Raise a ValueError unless `value` is a finite number > 0."""
    if value is None or not math.isfinite(float(value)) or float(value) <= 0:
        raise ValueError(f"{name}={value!r}; expected a finite number > 0. Fix: set {name} > 0.")


def require_count(name: str, value: int | None, *, allow_none: bool = True) -> None:
    """Raise a ValueError unless `value` is a positive int (or None when allowed)."""
    if value is None and allow_none:
        return
    if not is_int(value) or value < 1:
        raise ValueError(f"{name}={value!r}; expected an integer >= 1. Fix: set {name} >= 1.")
