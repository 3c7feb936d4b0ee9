"""What an evaluation may plan for in memory: the bytes each sample, pair and test episode
holds, and the checks that refuse a generation which would not fit, with a fix that does
(``Problem.check_capacity`` runs the ones of its evaluation); the share of a device's free
memory and that free memory are common/memory.py's."""

from __future__ import annotations

import torch

from neurorun.common.memory import MEMORY_SHARE, device_free_bytes

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


def check_samples(popsize: int, dim: int, device: torch.device) -> None:
    """ValueError when a generation's samples (``popsize`` x ``dim`` float32 numbers,
    SAMPLE_COPIES times over, held by torch) would not fit ``device``'s free memory."""
    samples = SAMPLE_COPIES * popsize * dim * 4
    free = (torch.cuda.mem_get_info(device)[0] if device.type == "cuda"
            else device_free_bytes(device))  # torch holds them, not jax
    if samples > MEMORY_SHARE * free:
        fits = int(popsize * MEMORY_SHARE * free / samples)
        raise ValueError(
            f"algo.popsize={popsize} solutions of {dim:,} parameters need about "
            f"{samples / 1e9:.1f} GB for a generation's samples, and this machine has "
            f"{free / 1e9:.1f} GB free. Fix: algo.popsize={fits} or less (or a smaller "
            "network)")


def check_compiled(popsize: int, slots: int, fixed: int, per_slot: int, *,
                   device: torch.device, devices: int, spec: str) -> None:
    """ValueError when the compiled evaluation of ``popsize`` solutions on ``slots`` env slots
    (``fixed`` bytes plus ``per_slot`` a slot: ``JaxRollout.memory_bytes``) would not fit
    ``device``'s free memory; the fix names the slots that fit."""
    need, budget = fixed + per_slot * slots, MEMORY_SHARE * device_free_bytes(device)
    if need <= budget:
        return
    fits = int((budget - fixed) // per_slot)
    fix = (f"problem.max_num_envs={fits} (slots take the solutions in turn), or a smaller "
           "algo.popsize" if fits >= 1 else "a smaller algo.popsize" + (
               " or fewer problem.devices (each holds every solution)" if devices > 1 else ""))
    raise ValueError(
        f"algo.popsize={popsize} on {slots:,} env slots needs about {need / 1e9:.1f} GB for the "
        f"compiled evaluation of {spec}, and the {device.type} has "
        f"{budget / MEMORY_SHARE / 1e9:.1f} GB free. Fix: {fix}")


def check_results(popsize: int, num_episodes: int, num_test_episodes: int) -> None:
    """ValueError when the results of a generation's ``popsize`` x ``num_episodes`` episodes,
    or of a center evaluation's ``num_test_episodes``, would not fit the machine's free memory
    (both are held on the host until the evaluation ends)."""
    free = device_free_bytes(torch.device("cpu"))
    for key, count, each, what in (
            ("problem.num_episodes", num_episodes, popsize * PAIR_BYTES,
             f"episodes of each of {popsize:,} solutions"),
            ("eval_episodes", num_test_episodes, TEST_EPISODE_BYTES, "test episodes")):
        if count * each > MEMORY_SHARE * free:
            fits = int(MEMORY_SHARE * free // each)
            raise ValueError(
                f"{key}={count}: {what} hold at least {count * each / 1e9:,.1f} GB of results "
                f"until the evaluation ends, and this machine has {free / 1e9:.1f} GB free. "
                "Fix: " + (f"{key}={fits} or less" if fits else "a smaller algo.popsize"))
