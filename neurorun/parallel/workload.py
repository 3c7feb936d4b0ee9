"""Pure helpers of the ray evaluator: splitting work, sizing actors, seeds (no ray here)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from neurorun.common.values import is_int

NUM_ACTORS_WORDS = ("max", "num_cpus", "num_gpus", "num_devices")
RAY_MIN_CPU = 1e-4  # ray's resource precision: a smaller CPU share is an error inside ray
ACTOR_BYTES = 200 * 10**6  # each actor is a process: Python, torch and a CartPole env hold
# about 150 MB of its own, ray's worker the rest (a lower bound: other envs hold more)


def check_workload(num_actors: Any, num_subbatches: Any, subbatch_size: Any) -> None:
    """The ray evaluator's counts, checked before ray starts (the config checks and
    ``RayEvaluator`` both call this): ``num_actors`` an integer >= 1 or one of
    NUM_ACTORS_WORDS; at most one of ``num_subbatches`` and ``subbatch_size``, an integer >= 1.
    """
    if not (num_actors in NUM_ACTORS_WORDS or _is_count(num_actors)):
        raise ValueError(f"num_actors={num_actors!r}: expected an integer >= 1 or one of "
                         f"{list(NUM_ACTORS_WORDS)}. Fix: parallel.num_actors=max (one per "
                         "CPU) or a count.")
    for key, value in (("num_subbatches", num_subbatches), ("subbatch_size", subbatch_size)):
        if value is not None and not _is_count(value):
            raise ValueError(f"{key}={value!r}: expected an integer >= 1 or null. Fix: "
                             f"parallel.{key}=<integer >= 1> or parallel.{key}=null.")
    if num_subbatches is not None and subbatch_size is not None:
        raise ValueError(f"num_subbatches={num_subbatches} and subbatch_size={subbatch_size} "
                         "are exclusive; expected at most one. Fix: set the other to null.")


def check_max_actor_restarts(value: Any) -> int:
    """``max_actor_restarts`` (how many dead actors may be replaced before evaluation stops),
    checked before ray starts."""
    if not is_int(value) or value < 0:
        raise ValueError(f"max_actor_restarts={value!r}: expected an integer >= 0. Fix: "
                         "parallel.max_actor_restarts=<integer >= 0>.")
    return value


def _is_count(value: Any) -> bool:
    return is_int(value) and value >= 1


def split_workload(total: int, parts: int) -> list[int]:
    """``parts`` sizes adding up to ``total``, as equal as possible, larger ones first."""
    if parts < 1:
        raise ValueError(f"parts={parts}; expected at least 1")
    base, extra = divmod(int(total), int(parts))
    return [base + (1 if i < extra else 0) for i in range(parts)]


def subbatch_bounds(total: int, *, num_actors: int, num_subbatches: int | None = None,
                    subbatch_size: int | None = None) -> list[tuple[int, int]]:
    """``(first, stop)`` of each sub-batch of a population of ``total`` solutions.

    ``num_subbatches`` splits into that many near-equal parts, ``subbatch_size`` into parts
    of that size (the last may be smaller); neither: one part per actor (the pair is checked
    by ``check_workload``). Empty parts are dropped, so every solution is in exactly one
    sub-batch.
    """
    if subbatch_size is not None:
        sizes = [min(int(subbatch_size), total - f) for f in range(0, total, int(subbatch_size))]
    else:
        sizes = split_workload(total, num_actors if num_subbatches is None
                               else int(num_subbatches))
    stops = np.cumsum([s for s in sizes if s > 0]).tolist()
    return list(zip([0, *stops[:-1]], stops, strict=True))


def resolve_num_actors(num_actors: int | str, *, num_cpus: float, num_gpus: float,
                       num_gpus_per_actor: float | None) -> tuple[int, float]:
    """``(number of actors, GPUs per actor)`` from the config and the cluster's resources.

    "max" / "num_cpus": one actor per CPU; "num_gpus": one per GPU, each given one GPU;
    "num_devices": min(CPUs, GPUs) actors sharing the GPUs (one per CPU without GPUs).
    ``num_actors`` is checked by ``check_workload``.
    """
    if num_actors in ("num_gpus", "num_devices") and num_gpus_per_actor is not None:
        raise ValueError(f"num_gpus_per_actor={num_gpus_per_actor} with num_actors="
                         f"{num_actors!r}, which assigns GPUs itself. Fix: "
                         "num_gpus_per_actor=null, or give num_actors as a number.")
    cpus, gpus = int(num_cpus), int(num_gpus)
    if num_actors in ("max", "num_cpus"):
        count, per_actor = cpus, num_gpus_per_actor or 0.0
    elif num_actors == "num_gpus":
        if gpus < 1:
            raise ValueError("num_actors='num_gpus' but the ray cluster has no GPU. Fix: "
                             "num_actors=num_cpus (or a number), or run where GPUs are.")
        count, per_actor = gpus, 1.0
    elif num_actors == "num_devices":
        count = min(cpus, gpus) if gpus else cpus
        per_actor = num_gpus / count if gpus else 0.0
    else:
        count, per_actor = int(num_actors), num_gpus_per_actor or 0.0
    if count < 1:
        raise ValueError(f"num_actors={num_actors!r} resolves to {count} actors (cluster: "
                         f"{num_cpus:g} CPUs, {num_gpus:g} GPUs); expected at least 1")
    return count, float(per_actor)


def payload_bytes(value: Any) -> int:
    """Bytes of the tensors and arrays inside ``value`` (dicts, lists and tuples walked)."""
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, Mapping):
        return sum(payload_bytes(v) for v in value.values())
    if isinstance(value, list | tuple):
        return sum(payload_bytes(v) for v in value)
    return 0


def mix_seed(*values: int) -> int:
    """A 63-bit seed from integers (different tuples give unrelated seeds)."""
    sequence = np.random.SeedSequence([int(v) % 2**63 for v in values])
    return int(sequence.generate_state(1, np.uint64)[0]) % 2**63


def local_cpu_share(count: int, num_cpus: float, actor_config: dict[str, Any]) -> float | None:
    """The fraction of a CPU each of `count` actors gets when a local ray has fewer CPUs than
    actors and the user did not set `actor_config.num_cpus` (None: one CPU each fits)."""
    if "num_cpus" in actor_config or count <= num_cpus:
        return None
    return num_cpus / count


def check_capacity(count: int, *, cpus_each: float, gpus_each: float, num_cpus: float,
                   num_gpus: float, where: str = "this local ray") -> None:
    """Refuse actors the ray could never place (it would wait for them, then time out)."""
    for kind, each, total, fix in (
            ("CPU", cpus_each, num_cpus, "parallel.actor_config.num_cpus=<a fraction, e.g. 0.5>"),
            ("GPU", gpus_each, num_gpus, "parallel.num_gpus_per_actor=<a smaller fraction>")):
        if kind == "CPU" and 0 < each < RAY_MIN_CPU:
            raise ValueError(
                f"parallel.num_actors={count} actors get {each:.2g} CPU each, below ray's "
                f"smallest, {RAY_MIN_CPU:g}. Fix: parallel.num_actors=max (one per CPU), or "
                "fewer actors (or a larger parallel.actor_config.num_cpus).")
        if count * each > total + 1e-9:
            raise ValueError(
                f"parallel.num_actors={count} actors x {each:g} {kind} each need "
                f"{count * each:g} {kind}s, but {where} has {total:g}; ray would wait for "
                f"them forever. Fix: parallel.num_actors=max (one per CPU), or {fix}.")


def check_local_actors(count: int, *, free_bytes: int, memory_share: float,
                       given: str = "") -> None:
    """Refuse, before a local ray starts, more actors than this machine's memory holds: each
    is a process of its own (5000 on a small machine crashed ray before generation 1).
    ``given``: the setting that asked for them, when not ``parallel.num_actors``."""
    need, spare = count * ACTOR_BYTES, memory_share * free_bytes
    if need > spare:
        raise ValueError(
            f"{given or f'parallel.num_actors={count}'}: each ray actor is a process of its "
            f"own (torch and the env, about {ACTOR_BYTES / 1e9:.1f} GB), so they need about "
            f"{need / 1e9:,.0f} GB, and this machine has {free_bytes / 1e9:.1f} GB free. Fix: "
            f"parallel.num_actors=max (one per CPU), or {int(spare // ACTOR_BYTES)} or less.")
