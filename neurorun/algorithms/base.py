"""The ask/tell interface every algorithm shares.

A generation is: `ask()` (any number of times: adaptive popsize adds samples from the same
distribution), then one `tell(fitness)` with the fitness of every pending sample, in order.
Subclasses implement `_sample(n)`, `_update(samples, fitness)` (fitness already turned so
that higher is better), `stdev`, `center` and `_state()` / `_load_state()`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, ClassVar

import torch

from neurorun.algorithms.options import options_from_flat, require_count

OBJECTIVE_SENSES = ("max", "min")


class SearchAlgorithm:
    """Public ask/tell/state_dict; the search itself lives in the subclasses."""

    name: ClassVar[str]
    Options: ClassVar[type]  # the dataclass of this algorithm's options
    DEFAULTS: ClassVar[dict[str, Any]] = {}  # algorithm-specific option defaults

    def __init__(self, solution_length: int, *, popsize: int | None = None,
                 seed: int | None = None, device: str | torch.device = "cpu",
                 dtype: torch.dtype = torch.float32, objective_sense: str = "max",
                 **options: Any):
        require_count("solution_length", solution_length, allow_none=False)
        if objective_sense not in OBJECTIVE_SENSES:
            raise ValueError(
                f"objective_sense={objective_sense!r}; expected 'max' or 'min'. "
                "Fix: 'max' when higher fitness is better, 'min' for costs."
            )
        self.solution_length = solution_length
        self.objective_sense = objective_sense
        self.device = torch.device(device)
        self.dtype = dtype
        self.options = options_from_flat(self.Options, {**self.DEFAULTS, **options})
        self.popsize = self.default_popsize(solution_length) if popsize is None else popsize
        require_count("popsize", self.popsize, allow_none=False)
        require_count("num_interactions", self.num_interactions)
        require_count("popsize_max", self.popsize_max)
        self.generator = torch.Generator(device=self.device)
        if seed is None:
            self.generator.seed()
        else:
            self.generator.manual_seed(int(seed))
        self.generation = 0
        self._pending: list[torch.Tensor] = []
        self._last: dict[str, float] = {}

    # -- what subclasses provide ------------------------------------------------------
    def default_popsize(self, solution_length: int) -> int:
        raise ValueError(
            f"popsize=None for {self.name}; expected an integer >= 1 ({self.name} has no default "
            "population size). Fix: set popsize."
        )

    @property
    def center(self) -> torch.Tensor:
        raise NotImplementedError

    @property
    def stdev(self) -> torch.Tensor:
        raise NotImplementedError

    def _sample(self, n: int) -> torch.Tensor:
        raise NotImplementedError

    def _update(self, samples: torch.Tensor, fitness: torch.Tensor) -> None:
        raise NotImplementedError

    def _state(self) -> dict[str, Any]:
        raise NotImplementedError

    def _load_state(self, state: Mapping[str, Any]) -> None:
        raise NotImplementedError

    # -- adaptive popsize ---------------------------------------------------------------
    @property
    def num_interactions(self) -> int | None:
        return self.options.adaptive.num_interactions

    @property
    def popsize_max(self) -> int | None:
        return self.options.adaptive.popsize_max

    # -- ask / tell ---------------------------------------------------------------------
    def ask(self, n: int | None = None) -> torch.Tensor:
        """Sample `n` (default: popsize) more solutions of the current generation, (n, D)."""
        n = self.popsize if n is None else n
        require_count("n", n, allow_none=False)
        samples = self._sample(n)
        self._pending.append(samples)
        return samples

    def tell(self, fitness: torch.Tensor | Any) -> dict[str, float]:
        """Update the search from the fitness of all solutions asked since the last tell."""
        if not self._pending:
            raise ValueError("tell() called with no pending samples. Fix: call ask() first.")
        fitness = self._check_fitness(fitness, sum(len(p) for p in self._pending))
        samples = self._take_pending()
        self._update(samples, fitness if self.objective_sense == "max" else -fitness)
        self.generation += 1
        self._last = population_stats(fitness, self.objective_sense)
        return self.status

    def _take_pending(self) -> torch.Tensor:
        pending = self._pending
        self._pending = []
        return pending[0] if len(pending) == 1 else torch.cat(pending)

    def _check_fitness(self, fitness, expected: int) -> torch.Tensor:
        fitness = torch.as_tensor(fitness, device=self.device, dtype=self.dtype).reshape(-1)
        if len(fitness) != expected:
            raise ValueError(
                f"fitness has {len(fitness)} values; expected {expected} (one per solution asked "
                "since the last tell). Fix: evaluate every asked solution, in order."
            )
        nan = torch.isnan(fitness)
        if bool(nan.any()):
            where = nan.nonzero().flatten()[:5].tolist()
            raise ValueError(
                f"fitness contains NaN at indices {where}; expected finite numbers. Fix: find what "
                "makes those evaluations NaN, or map them to a very bad finite fitness."
            )
        return fitness

    @property
    def status(self) -> dict[str, float]:
        """Generation, popsize, stdev_mean and the last population's fitness summary."""
        return {
            "generation": self.generation,
            "popsize": int(self._last.get("popsize", self.popsize)),
            "stdev_mean": float(self.stdev.mean()),
            **{k: v for k, v in self._last.items() if k != "popsize"},
        }

    # -- distributed halves (gradient-based algorithms override) --------------------------
    def compute_gradients(self, samples, fitness) -> dict[str, torch.Tensor]:
        raise ValueError(f"{self.name} has no distributed mode: {self._no_gradients_reason()} "
                         "Fix: algo.distributed=false (evaluation still runs in parallel).")

    def apply_gradients(self, gradients: Mapping[str, torch.Tensor]) -> None:
        raise ValueError(f"{self.name} has no distributed mode: {self._no_gradients_reason()} "
                         "Fix: algo.distributed=false (evaluation still runs in parallel).")

    def replica(self) -> SearchAlgorithm:
        """A copy for a distributed actor, which samples and computes gradients: without the
        optimizer (the center step happens here) and with nothing pending."""
        replica = copy.copy(self)
        replica.optimizer = None
        replica._pending = []
        return replica

    def step_with_gradients(self, gradients: Mapping[str, torch.Tensor]) -> None:
        """One generation of distributed mode: follow the actors' averaged gradients."""
        self.apply_gradients({k: v.to(self.device, self.dtype) for k, v in gradients.items()})
        self.generation += 1

    def _no_gradients_reason(self) -> str:
        return "its update is not an average of per-sample gradients."

    # -- checkpoints ----------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue bit-identically, including the RNG state."""
        return {
            "algorithm": self.name,
            "solution_length": self.solution_length,
            "generation": self.generation,
            "rng": self.generator.get_state(),
            "pending": [p.clone() for p in self._pending],
            "last": dict(self._last),
            "search": self._state(),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if state["algorithm"] != self.name or state["solution_length"] != self.solution_length:
            raise ValueError(
                f"state of {state['algorithm']} with D={state['solution_length']} cannot load "
                f"into {self.name} with D={self.solution_length}. Fix: build the algorithm with "
                "the same name and solution_length as the run that saved it."
            )
        self.generation = int(state["generation"])
        self.generator.set_state(state["rng"].cpu())
        self._pending = [p.to(self.device, self.dtype).clone() for p in state["pending"]]
        self._last = dict(state["last"])
        self._load_state(state["search"])


def population_stats(fitness: torch.Tensor, sense: str) -> dict[str, float]:
    """popsize, mean_eval, median_eval (halfway between the middle two of an even count) and
    pop_best_eval (the max, or the min when minimizing) of one generation's fitness."""
    values = fitness.double()
    return {
        "popsize": len(fitness),
        "mean_eval": float(values.mean()),
        "median_eval": float(values.quantile(0.5)),
        "pop_best_eval": float(values.max() if sense == "max" else values.min()),
    }
