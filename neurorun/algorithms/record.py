"""An algorithm's record: what state.pt holds of it, and how it is written and read back."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, TypedDict

import torch


class AlgorithmRecord(TypedDict):
    """An algorithm's record (``state_dict``): state.pt's ``algorithm``."""

    algorithm: str  # its name in ALGORITHMS
    solution_length: int
    generation: int  # since its last start (a restart starts it again)
    rng: torch.Tensor  # the torch generator's state: the noise
    draw: int  # the noise draws so far (a seeds source's next row)
    pending: list[torch.Tensor]  # samples asked and not told: [] between generations
    last: dict[str, Any]  # the last generation's PopulationStats ({} before the first)
    search: dict[str, Any]  # the distribution and its optimizer: each algorithm's `_state`


class Recorded:
    """``state_dict``/``load_state_dict`` of a `SearchAlgorithm`: its ask/tell progress and its
    generator here, its distribution through the subclass's ``_state``/``_load_state``."""

    name: ClassVar[str]
    solution_length: int
    generation: int
    generator: torch.Generator
    device: torch.device
    dtype: torch.dtype
    _draw: int
    _pending: list[torch.Tensor]
    _last: dict[str, float]

    def _state(self) -> dict[str, Any]:
        raise NotImplementedError

    def _load_state(self, state: Mapping[str, Any]) -> None:
        raise NotImplementedError

    def state_dict(self) -> AlgorithmRecord:
        """Everything needed to continue bit-identically, including the RNG state."""
        return AlgorithmRecord(
            algorithm=self.name,
            solution_length=self.solution_length,
            generation=self.generation,
            rng=self.generator.get_state(),
            draw=self._draw,
            pending=[p.clone() for p in self._pending],
            last=dict(self._last),
            search=self._state(),
        )

    def load_state_dict(self, state: AlgorithmRecord) -> None:
        if state["algorithm"] != self.name or state["solution_length"] != self.solution_length:
            raise ValueError(
                f"state of {state['algorithm']} with D={state['solution_length']} cannot load "
                f"into {self.name} with D={self.solution_length}. Fix: build the algorithm with "
                "the same name and solution_length as the run that saved it."
            )
        self.generation = int(state["generation"])
        self.generator.set_state(state["rng"].cpu())
        self._draw = int(state["draw"])
        self._pending = [p.to(self.device, self.dtype).clone() for p in state["pending"]]
        self._last = dict(state["last"])
        self._load_state(state["search"])
