"""Crafting a run's state.pt for the tests of its checks: load it, change it, save it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch


def craft_state(run: Path, change: Callable[[dict[str, Any]], Any]) -> Path:
    """Apply ``change`` (a function of the loaded record) to the run's state.pt; its path."""
    path = run / "checkpoints" / "state.pt"
    state = torch.load(path, weights_only=True)
    change(state)
    torch.save(state, path)
    return path


def set_key(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """A change setting the ``/``-separated ``key`` of the record (a callable value: a
    function of the old one)."""
    def change(state: dict[str, Any]) -> None:
        *parents, last = key.split("/")
        for part in parents:
            state = state[part]
        state[last] = value(state[last]) if callable(value) else value
    return change
