"""Connecting to ray: start a local instance or join a cluster, quietly; and leaving it."""

from __future__ import annotations

import logging
from typing import Any


def connect(address: str | None = None, *, num_cpus: int | None = None,
            include_dashboard: bool = False) -> bool:
    """Make sure this process is connected to ray; returns True when this call connected it
    (the caller then disconnects it with ``disconnect``), False when it already was.

    Args:
        address: None or "": start a local ray with ``num_cpus`` CPUs (None: all cores);
            "auto" or "host:port": join the running cluster (``num_cpus`` is the cluster's).
        include_dashboard: start ray's dashboard, bound to 127.0.0.1 (local ray only).
    """
    import ray  # a dependency, imported on first use: it takes a second to load

    if ray.is_initialized():
        return False
    quiet: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.ERROR}
    if address:
        ray.init(address=str(address), **quiet)
        return True
    extra: dict[str, Any] = {"include_dashboard": bool(include_dashboard)}
    if include_dashboard:
        extra["dashboard_host"] = "127.0.0.1"
    ray.init(num_cpus=None if num_cpus is None else int(num_cpus), **extra, **quiet)
    return True


def disconnect() -> None:
    """Leave ray: a local instance this process started stops, a joined cluster keeps running
    (``ray.shutdown`` only disconnects the driver from it)."""
    import ray

    if ray.is_initialized():
        ray.shutdown()


def cluster_resources() -> tuple[float, float]:
    """(CPUs, GPUs) of the connected cluster."""
    import ray

    resources = ray.cluster_resources()
    return float(resources.get("CPU", 0.0)), float(resources.get("GPU", 0.0))
