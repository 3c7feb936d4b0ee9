"""What an evaluation may plan for in memory: the share of a device's free memory, the bytes
each sample, pair and test episode holds, and the free memory of a device (a GPU as jax sees it,
else the machine's available memory)."""

from __future__ import annotations

import os

import torch

MEMORY_SHARE = 0.8  # of the device's free memory, the most a generation may plan for
SAMPLE_COPIES = 3  # float32 copies of a generation's P x D samples alive at once (samples,
# noise rows, the policy's batched parameters)
HOST_SLOTS = 4096  # env slots when max_num_envs is null and the evaluation is not the compiled
# jax program (gymnasium, EnvPool, factories, jax envs stepped from Python): more only cost
# memory, and seeded results do not depend on the count
PAIR_BYTES = 128  # what each (solution, episode) pair of an evaluation holds until it ends,
# counting its one step at least: per-pair returns, lengths and flags, per-step trace rows
TEST_EPISODE_BYTES = 32  # what each test episode holds until the evaluation ends (its return
# and length, and their concatenation)
TEST_SLOTS = 1024  # env slots of test episodes: more episodes run in turns (seeds as one batch
# on backends that seed every episode)


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
