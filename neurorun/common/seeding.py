"""Seeding in one place: the global RNGs (python, numpy, torch) and the per-part seeds.

One `seed` in the config fixes everything: `seed_everything` seeds the global generators and
`derive_seed` gives each part (algorithm, problem, center evaluation, initial center) its own
stream, so adding a random draw in one part does not shift the others.
"""

from __future__ import annotations

import random
from typing import TypedDict

import numpy as np
import torch

PARTS = ("algorithm", "problem", "evaluation", "center_init", "restart")


def seed_everything(seed: int) -> None:
    """Seed python's `random`, numpy's global generator and torch (CPU and CUDA)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)  # also seeds every CUDA device


def derive_seed(seed: int, part: str, attempt: int = 0) -> int:
    """A 31-bit seed for `part` (one of PARTS), a fixed function of (seed, part, attempt);
    `attempt` k > 0 seeds the k-th restart of the search (0: the first start)."""
    if part not in PARTS:
        raise ValueError(f"part={part!r}; expected one of {PARTS}")
    sequence = np.random.SeedSequence([int(seed) % 2**63, PARTS.index(part)]
                                      + ([int(attempt)] if attempt else []))
    return int(sequence.generate_state(1)[0] >> 1)


class NumpyRecord(TypedDict):
    """numpy's legacy MT19937 state (``np.random.get_state()``), its keys as a tensor."""

    kind: str
    keys: torch.Tensor  # 624 int64
    pos: int
    has_gauss: int
    cached: float


class _CPUGenerators(TypedDict):
    python: list  # [version, internal state, cached normal deviate]
    numpy: NumpyRecord
    torch: torch.Tensor


class GeneratorsRecord(_CPUGenerators, total=False):
    """The global generators' record (`rng_state`): state.pt's ``rng``."""

    cuda: list[torch.Tensor]  # saved on a GPU only (restored where one is)


def rng_state() -> GeneratorsRecord:
    """The global RNG states, as tensors and plain containers (loads with weights_only)."""
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    state = GeneratorsRecord(
        python=_python_state_to_plain(random.getstate()),
        numpy=NumpyRecord(kind=kind, keys=torch.from_numpy(keys.astype(np.int64)), pos=int(pos),
                          has_gauss=int(has_gauss), cached=float(cached)),
        torch=torch.get_rng_state())
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: GeneratorsRecord) -> None:
    """Restore what `rng_state` returned."""
    random.setstate(python_state(state["python"]))
    np.random.set_state(numpy_state(state["numpy"]))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def python_state(saved: list) -> tuple:
    """``random.setstate``'s argument from what `rng_state` saved."""
    version, internal, gauss = saved
    return version, tuple(internal), gauss


def numpy_state(saved: NumpyRecord) -> tuple:
    """``np.random.set_state``'s argument from what `rng_state` saved."""
    return (saved["kind"], saved["keys"].numpy().astype(np.uint32), saved["pos"],
            saved["has_gauss"], saved["cached"])


def _python_state_to_plain(state: tuple) -> list:
    version, internal, gauss = state
    return [version, list(internal), gauss]
