"""How much memory a part may plan for: the share of a device's free memory, and that free
memory (a GPU's as jax sees it, else the machine's available memory). The evaluation's checks
(problems/memory.py) and the noise table (algorithms/noise.py) both ask."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

MEMORY_SHARE = 0.8  # of the device's free memory, the most a generation may plan for


def device_free_bytes(device: torch.device) -> int:
    """Free memory of the device the compiled evaluation runs on: a GPU's (as jax sees it),
    else the machine's available memory (MemAvailable)."""
    if device.type == "cuda":
        import jax

        stats = jax.devices("gpu")[device.index or 0].memory_stats() or {}
        return int(stats.get("bytes_limit", 0) - stats.get("bytes_in_use", 0))
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
