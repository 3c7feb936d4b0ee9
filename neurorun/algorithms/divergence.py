"""A search that diverged: the update that left the center or the stdev infinite or NaN,
said with the step sizes and the start that caused it."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import torch

from neurorun.common.values import is_number

if TYPE_CHECKING:
    from neurorun.algorithms.base import SearchAlgorithm


class SearchDivergedError(ArithmeticError):
    """An update left the center or the stdev infinite or NaN (a step size far too large)."""


def require_finite(algorithm: SearchAlgorithm) -> None:
    """SearchDivergedError at the update that made the center or stdev infinite or NaN: such
    a center would be evaluated, saved and even reported as the best policy."""
    for part, values in (("center", algorithm.center), ("stdev", algorithm.stdev)):
        if bool(torch.isfinite(values).all()):
            continue
        flat = _flat_options(algorithm.options)
        rates = {k: v for k, v in flat.items()  # not scale_learning_rate
                 if (k.endswith("learning_rate") or k == "step_size") and not isinstance(v, bool)}
        spread = {k: flat[k] for k in (*algorithm.STEP_SIZES, "stdev_min", "stdev_max")
                  if flat.get(k) is not None}
        culprits = [k for k in rates if ("stdev" in k) == (part == "stdev")] or list(rates)
        given = ", ".join(f"algo.{k}={_option_value(v)}" for k, v in {**rates, **spread}.items())
        fix = " or ".join(f"a smaller algo.{k}" for k in culprits) or "finite rewards"
        # the start sets the first steps too (radius_init=1e308 overflows the first update)
        start = ", ".join([*(f"algo.{k}" for k in spread),
                           "algo.center_init or problem.initial_bounds"])
        raise SearchDivergedError(
            f"algo={algorithm.name} diverged in generation {algorithm.generation + 1}: its "
            f"{part} is no longer finite (inf or NaN){f' with {given}' if given else ''}. "
            f"Fix: {fix}, or a smaller start ({start}).")


def _flat_options(options: Any) -> dict[str, Any]:
    """An algorithm's options as flat keyword options (the groups' fields at the top level)."""
    flat = {}
    for option in dataclasses.fields(options):
        value = getattr(options, option.name)
        if dataclasses.is_dataclass(value):
            flat.update({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
        else:
            flat[option.name] = value
    return flat


def _option_value(value: Any) -> str:
    """An option's value as a message shows it: null, 1e+308, or a short list."""
    if value is None:
        return "null"
    if is_number(value):
        return f"{value:g}"
    text = repr(value.tolist() if isinstance(value, torch.Tensor) else value)
    return text if len(text) <= 40 else text[:37] + "..."
