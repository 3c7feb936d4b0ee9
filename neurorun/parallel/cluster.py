"""Connecting to ray: start a local instance or join a cluster, quietly; and leaving it.

Joining a cluster fails in one line, within seconds, when nothing listens at the address, no
cluster can be found for ``auto``, or the cluster runs another ray or Python version. What ray
prints meanwhile goes to the log, not the console.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import os
import re
import signal
import socket
import threading
from collections.abc import Iterator
from typing import Any

from neurorun.common.errors import one_line
from neurorun.common.extras import require
from neurorun.common.streams import native_output

CONNECT_TIMEOUT_S = 3.0  # a cluster's head answers a TCP connection at once
RAYLET_LOG = logging.getLogger("raylet")  # not under "ray", whose level ERROR would drop them
RAY_CORE_LOG = logging.getLogger("ray_core")  # ray's C++ lines in this process (not under "ray")
ANSI = re.compile(r"\x1b\[[0-9;]*m")  # colour codes


class ClusterError(ValueError):
    """A ray cluster that cannot be joined; the message says why and what to do."""


def connect(address: str | None = None, *, num_cpus: int | None = None,
            include_dashboard: bool = False) -> bool:
    """Make sure this process is connected to ray; returns True when this call connected it
    (the caller then disconnects it with ``disconnect``), False when it already was.

    Args:
        address: None or "": start a local ray with ``num_cpus`` CPUs (None: all cores), even
            where RAY_ADDRESS names a cluster;
            "auto" or "host:port": join the running cluster (``num_cpus`` is the cluster's).
        include_dashboard: start ray's dashboard, bound to 127.0.0.1 (local ray only).
    """
    require("ray", "parallel=ray")
    import ray  # the ray extra, imported on first use: it takes a second to load

    if ray.is_initialized():
        return False
    route_raylet_messages()
    quiet: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.ERROR}
    with native_stderr_to_log(), _own_sigterm():
        if address:
            _join(ray, str(address), quiet)
            return True
        extra: dict[str, Any] = {"include_dashboard": bool(include_dashboard)}
        if include_dashboard:
            extra["dashboard_host"] = "127.0.0.1"
        # "local": a new instance, whatever RAY_ADDRESS or a `ray start` here says (ray would
        # join those, and wait minutes where nothing answers)
        ray.init(address="local", num_cpus=None if num_cpus is None else int(num_cpus), **extra,
                 **quiet)
    return True


@contextlib.contextmanager
def _own_sigterm() -> Iterator[None]:
    """The SIGTERM handler as it was: `ray.init` sets one that exits at once (``sys.exit``),
    which took over the run's (checkpoint, resume command, exit 143)."""
    handler = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        if handler is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, handler)


@contextlib.contextmanager
def native_stderr_to_log() -> Iterator[None]:
    """ray's C++ core writes to file descriptor 2 until its log file is open, i.e. while
    `ray.init` runs: e.g. "Failed to determine local IP via external connectivity" on a machine
    with no route out, or a cluster's refusal of a missing token once a second. Those lines
    become `ray_core` records (neurorun.log under the command), not console lines, also when
    `ray.init` fails."""
    lines: list[str] = []
    try:
        with native_output(2) as lines:
            yield
    finally:
        for line in lines:
            RAY_CORE_LOG.warning("%s", line)


def _join(ray: Any, address: str, quiet: dict[str, Any]) -> None:
    where = f"parallel.address={address!r}"
    head = _find_head(where, address)
    if address == "auto":
        where += f" (ray found {head})"
    host, _, port = head.rpartition(":")
    try:
        socket.create_connection((host.removeprefix("ray://") or "127.0.0.1", int(port)),
                                 timeout=CONNECT_TIMEOUT_S).close()
    except OSError as error:
        raise ClusterError(
            f"{where}: nothing answers there ({error.strerror or error}). Fix: start a "
            "cluster with `ray start --head` and give the address it prints, or leave "
            "parallel.address empty for a ray on this machine") from None
    try:
        ray.init(address=head, **quiet)
    except ConnectionError as error:
        raise _not_found(where, error) from None
    except RuntimeError as error:
        if "Version mismatch" not in str(error):
            raise
        versions = one_line(str(error).partition("\n")[2], limit=None)  # below "Version mismatch"
        raise ClusterError(
            f"{where}: the cluster runs another ray or Python than this process ({versions}). "
            "Fix: install the cluster's versions here (pip install ray==<its version>), or "
            "start the cluster from this environment") from None


def _find_head(where: str, address: str) -> str:
    """The host:port of the head that ``address`` names; for ``auto`` the one ray joins
    (RAY_ADDRESS, the last `ray start` here, or a head process it sees on this machine, which
    may answer nowhere this process can reach: ray would wait minutes for it)."""
    if address == "auto":
        from ray._private import services

        clear = getattr(services.find_gcs_addresses, "cache_clear", None)
        if clear:  # as ray.init does: a head started since the last look is seen
            clear()
        try:
            address = services.canonicalize_bootstrap_address("auto")
        except ConnectionError as error:
            raise _not_found(where, error) from None
        except ValueError as error:  # RAY_ADDRESS that ray cannot read
            raise ClusterError(
                f"{where}: RAY_ADDRESS={os.environ.get('RAY_ADDRESS')!r} is no address ray "
                f"reads ({one_line(error)}). Fix: RAY_ADDRESS=<head host>:<port> (e.g. "
                "10.0.0.1:6379), or unset it and give parallel.address=<host:port>") from None
    if not address.rpartition(":")[2].isdigit():
        raise ClusterError(f"{where}: expected host:port (e.g. 10.0.0.1:6379) or auto")
    return address


def _not_found(where: str, error: ConnectionError) -> ClusterError:
    return ClusterError(
        f"{where}: no running ray cluster was found ({one_line(error)}). Fix: "
        "start one with `ray start --head`, or set RAY_ADDRESS / parallel.address to its "
        "host:port")


def route_raylet_messages() -> None:
    """ray prints its raylet's messages (e.g. "A worker died or was killed ...") to stdout,
    with colour codes, from a thread of the driver: make them records of the `raylet` logger
    (neurorun.log under the command; the pool says in its own line what it did about a dead
    actor). A ray without that hook (another version) keeps printing them."""
    from ray._private import worker

    printer = getattr(worker, "print_to_stdstream", None)
    if printer is None or getattr(printer, "routed", False):
        return

    def to_log(data: dict[str, Any], ignore_prefix: bool) -> None:
        for line in data.get("lines", []):
            RAYLET_LOG.warning("(%s) %s", data.get("pid"), ANSI.sub("", str(line)))

    to_log.routed = True  # type: ignore[attr-defined]
    worker.print_to_stdstream = to_log


def disconnect() -> None:
    """Leave ray: a local instance this process started stops, its processes gone before this
    returns where ray can wait for them (a following command, or a batch job's end, finds none
    left); a joined cluster keeps running (``ray.shutdown`` only disconnects the driver)."""
    import ray

    if ray.is_initialized():
        waits = "wait_for_processes" in inspect.signature(ray.shutdown).parameters  # newer rays
        ray.shutdown(**({"wait_for_processes": True} if waits else {}))


def cluster_resources() -> tuple[float, float]:
    """(CPUs, GPUs) of the connected cluster."""
    import ray

    resources = ray.cluster_resources()
    return float(resources.get("CPU", 0.0)), float(resources.get("GPU", 0.0))
