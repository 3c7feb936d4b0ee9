"""Evolution strategies over a Gaussian search distribution, pure torch.

    from neurorun.algorithms import ALGORITHMS, make_algorithm
    algo = make_algorithm("pgpe", solution_length=10, popsize=20, center_learning_rate=0.5,
                          stdev_learning_rate=0.1, stdev_init=1.0, objective_sense="min", seed=0)
    x = algo.ask()          # (popsize, D)
    algo.tell(f(x))         # (popsize,)
"""

from __future__ import annotations

import difflib
from typing import Any

import torch

from neurorun.algorithms.ars import ARS
from neurorun.algorithms.base import SearchAlgorithm
from neurorun.algorithms.cem import CEM
from neurorun.algorithms.cmaes import CMAES, SepCMAES
from neurorun.algorithms.openai_es import OpenAIES
from neurorun.algorithms.options import option_names
from neurorun.algorithms.pgpe import PGPE
from neurorun.algorithms.snes import SNES
from neurorun.algorithms.xnes import XNES

ALGORITHMS: dict[str, type[SearchAlgorithm]] = {
    "pgpe": PGPE,
    "cem": CEM,
    "snes": SNES,
    "xnes": XNES,
    "cmaes": CMAES,
    "sep_cmaes": SepCMAES,
    "ars": ARS,
    "openai_es": OpenAIES,
}


def algorithms_with(option: str) -> list[str]:
    """The algorithms that have ``option`` (`top_directions` -> ["ars"])."""
    return [name for name, cls in ALGORITHMS.items() if option in option_names(cls.Options)]


def make_algorithm(name: str, *, solution_length: int, popsize: int | None = None,
                   seed: int | None = None, device: str | torch.device = "cpu",
                   dtype: torch.dtype = torch.float32, objective_sense: str = "max",
                   **options: Any) -> SearchAlgorithm:
    """Build the algorithm registered as `name` (see ALGORITHMS) with its options."""
    if name not in ALGORITHMS:
        close = difflib.get_close_matches(str(name), ALGORITHMS, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ValueError(
            f"algorithm {name!r} is unknown; expected one of {sorted(ALGORITHMS)}.{hint} "
            "Fix: use one of those names."
        )
    return ALGORITHMS[name](solution_length, popsize=popsize, seed=seed, device=device,
                           dtype=dtype, objective_sense=objective_sense, **options)


__all__ = ["ALGORITHMS", "ARS", "CEM", "CMAES", "PGPE", "SNES", "XNES", "OpenAIES",
           "SearchAlgorithm", "SepCMAES", "algorithms_with", "make_algorithm"]
