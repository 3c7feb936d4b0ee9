"""Which jax devices share the compiled evaluation (``problem.devices``).

``auto`` is every local device of jax's backend: the GPUs of a node, the cores of a TPU, or on
a CPU one XLA host device per core this process may use. XLA makes its CPU host devices when
jax starts (``--xla_force_host_platform_device_count`` in ``XLA_FLAGS``), so a run's entry
(``loop.build.use_host_devices``) sets the count before anything imports jax
(``host_device_flags``) and never changes a count the user's own ``XLA_FLAGS`` (or jax's
``JAX_NUM_CPU_DEVICES``, which wins over it) forces. A count (or highest id + 1) above
``DEVICES_PER_CORE`` per usable core, from any of the three, is refused before jax starts: XLA
would make every one of them, each holding memory of its own, and no machine has that many
accelerators per core. A flag of the user's ``XLA_FLAGS`` that XLA does not know would end the
process as jax starts (XLA's own fatal line, the run folder left behind): ``check_xla_flags``
asks a fresh process first.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from neurorun.common.values import is_int

HOST_COUNT_FLAG = "--xla_force_host_platform_device_count"
_FLAG = re.compile(re.escape(HOST_COUNT_FLAG) + r"(?:=(\S*))?(?!\S)")
DEVICES_PER_CORE = 8  # the most devices (or highest id + 1) problem.devices may ask per core


def check_devices(devices: Any) -> Any:
    """``devices`` as given if it is ``auto``, a count >= 1 or a non-empty list of distinct
    ids >= 0, at most ``max_devices()`` devices (ids below it), else ValueError (checked
    before jax starts)."""
    if devices == "auto":
        return devices
    if is_int(devices):
        if devices >= 1:
            _check_count(devices, f"problem.devices={devices}", _FIX)
            return devices
    elif isinstance(devices, Sequence) and not isinstance(devices, str) and devices and all(
            is_int(i) and i >= 0 for i in devices) \
            and len(set(devices)) == len(devices):
        _check_count(max(devices) + 1, f"problem.devices={list(devices)} (highest id "
                                        f"{max(devices)})", _FIX)
        return list(devices)
    raise ValueError(f"problem.devices={devices!r}; expected auto, a count >= 1 or a list of "
                     "distinct device ids, e.g. [0, 1]")


def max_devices() -> int:
    """The most devices a process may ask for: ``DEVICES_PER_CORE`` per usable core."""
    return DEVICES_PER_CORE * usable_cores()


_FIX = "problem.devices=auto (every device jax has), a count up to {0} or ids below {0}"


def _check_count(count: int, what: str, fix: str) -> None:
    if count > max_devices():
        raise ValueError(f"{what} is more devices than this machine can hold: at most "
                         f"{DEVICES_PER_CORE} per usable core ({usable_cores()} here: "
                         f"{max_devices()}). Fix: {fix.format(max_devices())}")


def usable_cores() -> int:
    """The CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def host_device_flags(devices: Any, environ: Mapping[str, str]) -> tuple[str | None, str]:
    """The ``XLA_FLAGS`` that give jax's CPU as many host devices as ``devices`` asks for
    (None: leave them as they are), and one line saying which count is used."""
    jax_count = _jax_num_cpu_devices(environ)
    if jax_count is not None:
        _check_count(jax_count, f"JAX_NUM_CPU_DEVICES={jax_count}",
                     "a count up to {} in JAX_NUM_CPU_DEVICES, or unset it")
        return None, (f"jax's CPU has {jax_count} host device(s), as JAX_NUM_CPU_DEVICES says")
    flags = environ.get("XLA_FLAGS", "")
    given = list(_FLAG.finditer(flags))
    for flag in given:  # XLA would print its 300-line list of flags and stop
        value = flag.group(1) or ""
        if not (value.isascii() and value.isdigit() and int(value) >= 1):
            raise ValueError(f"XLA_FLAGS holds {flag.group(0)}; expected "
                             f"{HOST_COUNT_FLAG}=<a count >= 1>. Fix: correct it in XLA_FLAGS, "
                             "or remove it there and set problem.devices")
    if given:
        count = int(given[-1].group(1))  # XLA's flags: the last one given counts
        _check_count(count, f"XLA_FLAGS' {given[-1].group(0)}", "a count up to {} in XLA_FLAGS")
        return None, (f"jax's CPU has {count} host device(s), as XLA_FLAGS "
                      f"({HOST_COUNT_FLAG}) says")
    if devices == "auto":
        count, why = usable_cores(), "one per core this process may use"
    elif isinstance(devices, int):
        count, why = devices, "problem.devices"
    else:
        count, why = max(devices) + 1, "the highest id of problem.devices"
    if count == 1:
        return None, "jax's CPU has 1 host device"
    return (f"{flags} {HOST_COUNT_FLAG}={count}".strip(),
            f"jax's CPU has {count} host devices ({why})")


def check_xla_flags(flags: str) -> None:
    """ValueError (one line) when XLA does not know a flag of ``flags`` (``XLA_FLAGS``) other
    than the host device count (checked by ``host_device_flags``): XLA ends the process that
    starts jax with it. The probe runs without the count, so a sweep over problem.devices
    asks once."""
    others = " ".join(_FLAG.sub("", flags).split())
    if others:
        unknown = _unknown_xla_flags(others)
        if unknown:
            raise ValueError(f"XLA_FLAGS holds {unknown}, which this jax's XLA does not know "
                             "(XLA would end the run as jax starts). Fix: remove or correct "
                             "it in XLA_FLAGS")


@functools.cache
def _unknown_xla_flags(flags: str) -> str | None:
    """XLA's words for the flags of ``flags`` it does not know, None where it knows them all
    (or the probe says nothing): asked of a fresh process that starts jax with them, once per
    process and value."""
    # on a GPU, the probe takes memory as it needs it, not jax's default share
    environ = {**os.environ, "XLA_FLAGS": flags, "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
    try:
        probe = subprocess.run([sys.executable, "-c", "import jax; jax.devices()"], env=environ,
                               capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r"Unknown flags? in XLA_FLAGS: (.*)", probe.stderr)
    return found.group(1).strip() if probe.returncode and found else None


def _jax_num_cpu_devices(environ: Mapping[str, str]) -> int | None:
    """The host device count jax's own setting ``JAX_NUM_CPU_DEVICES`` forces (it wins over
    XLA_FLAGS' count; a negative one is jax's "unset"), None where it forces none."""
    value = environ.get("JAX_NUM_CPU_DEVICES", "").strip()
    if not value:
        return None
    try:
        count = int(value)
    except ValueError:
        count = 0
    if count == 0:
        raise ValueError(f"JAX_NUM_CPU_DEVICES={value!r}; expected a count >= 1. Fix: correct "
                         "it, or unset it and set problem.devices")
    return count if count > 0 else None


def jax_devices(devices: Any) -> list[Any]:
    """The jax devices ``devices`` names (``check_devices``' forms), of jax's backend.

    Raises:
        ValueError: more devices, or ids, than jax has (the message lists what it has).
    """
    import jax

    present = jax.local_devices()
    devices = check_devices(devices)
    if devices == "auto":
        return present
    kind = f"{len(present)} {present[0].platform} device(s)"
    fix = ("; on a CPU, XLA_FLAGS=" + HOST_COUNT_FLAG + "=N before jax starts (a run's entry "
           "sets it from problem.devices)") if present[0].platform == "cpu" else ""
    if isinstance(devices, int):
        if devices > len(present):
            raise ValueError(f"problem.devices={devices}, but jax has {kind}. Fix: "
                             f"problem.devices=auto or at most {len(present)}{fix}")
        return present[:devices]
    by_id = {device.id: device for device in present}
    unknown = [i for i in devices if i not in by_id]
    if unknown:
        raise ValueError(f"problem.devices={devices}: no device with id {unknown} (jax has "
                         f"{kind}, ids {sorted(by_id)}). Fix: ids from that list, or "
                         f"problem.devices=auto{fix}")
    return [by_id[i] for i in devices]
