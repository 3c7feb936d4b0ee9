"""A network namespace of its own for the servers a test starts, and what a process listens on.

ray 2.60's GCS and raylets listen on every interface (``[::]``) whatever ``--node-ip-address``
says, and its helpers on the machine's address: no ray setting holds them to loopback. Inside a
network namespace of its own only a loopback interface exists, so whatever they bind is
reachable from nothing but that namespace. ``unshare --net`` makes it (as root; elsewhere
``--user --map-root-user`` too, where unprivileged user namespaces are allowed), a holder
process keeps it, and commands join it with ``nsenter`` (both util-linux). Its processes are
exactly those whose ``/proc/<pid>/ns/net`` is the holder's: found, and stopped, without
touching anyone else's.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

# the holder: loopback up, then it keeps the namespace until the test closes its stdin or ends
HOLDER = [sys.executable, str(Path(__file__).resolve().parents[1] / "network_namespace.py"),
          "--hold"]
LISTEN = "0A"  # the TCP state column of /proc/net/tcp{,6}
# root makes namespaces; anyone else first a user namespace where they are root
USER_NS = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]


class NetworkNamespace:
    """A network namespace holding only a loopback interface, kept by a holder process."""

    def __init__(self) -> None:
        self.holder = subprocess.Popen(
            ["unshare", "--net", *USER_NS, *HOLDER], text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if self.holder.stdout.readline().strip() != "ready":
            error = self.holder.communicate(timeout=30)[1].strip().splitlines()
            raise RuntimeError(
                "cannot give the test's servers a network namespace of their own "
                f"({error[-1] if error else 'unshare failed'}), and ray would listen on every "
                "interface. Fix: run the tests as root, or allow unprivileged user namespaces")
        self.inode = os.readlink(f"/proc/{self.holder.pid}/ns/net")

    def command(self, argv: list[str]) -> list[str]:
        """``argv`` run inside the namespace (``nsenter`` execs it: the pid is the command's)."""
        user = ["--user", "--preserve-credentials"] if USER_NS else []
        return ["nsenter", f"--target={self.holder.pid}", "--net", *user, "--", *argv]

    def members(self) -> set[int]:
        """The processes inside the namespace other than the holder."""
        found = set()
        for name in os.listdir("/proc"):
            if name.isdigit():
                with contextlib.suppress(OSError):  # ended meanwhile, or not ours to read
                    if os.readlink(f"/proc/{name}/ns/net") == self.inode:
                        found.add(int(name))
        return found - {self.holder.pid}

    def empties(self, timeout_s: float = 60.0) -> bool:
        """Whether every process but the holder has left within ``timeout_s`` (a local ray's
        processes end a few seconds after the driver that stopped it, longer on a loaded
        machine)."""
        deadline = time.monotonic() + timeout_s
        while self.members():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.2)
        return True

    def close(self) -> None:
        """Let the holder end (the namespace goes with its last process)."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.holder.communicate(timeout=10)
        self.holder.kill()
        self.holder.wait()


def alone(argv: list[str]) -> list[str]:
    """``argv`` run where it sees no other process (a PID namespace with a /proc of its own),
    as on a machine where no ray runs: ray finds clusters by their processes."""
    return ["unshare", "--pid", "--fork", "--mount-proc", *USER_NS, "--", *argv]


def _address(hex_address: str) -> str:
    """A /proc/net/tcp{,6} address: 32-bit words in the host's (little-endian) byte order."""
    raw = b"".join(bytes.fromhex(hex_address[i:i + 8])[::-1]
                   for i in range(0, len(hex_address), 8))
    return socket.inet_ntop(socket.AF_INET if len(raw) == 4 else socket.AF_INET6, raw)


def listening(pid: int) -> list[tuple[str, int]]:
    """(address, port) of every TCP socket process ``pid`` listens on (its /proc/<pid>/fd
    sockets found in the LISTEN rows of its namespace's /proc/<pid>/net/tcp and tcp6)."""
    inodes = set()
    with contextlib.suppress(OSError):  # ended meanwhile
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                found = re.fullmatch(r"socket:\[(\d+)\]", os.readlink(f"/proc/{pid}/fd/{fd}"))
                if found:
                    inodes.add(found[1])
    sockets = []
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(OSError):
            for row in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
                fields = row.split()  # sl local rem st ... uid timeout inode
                if fields[3] == LISTEN and fields[9] in inodes:
                    address, port = fields[1].split(":")
                    sockets.append((_address(address), int(port, 16)))
    return sockets


def interfaces(pid: int) -> set[str]:
    """The network interfaces of process ``pid``'s namespace."""
    rows = Path(f"/proc/{pid}/net/dev").read_text().splitlines()[2:]  # two header rows
    return {row.split(":")[0].strip() for row in rows}


def loopback_only(pid: int, address: str) -> bool:
    """Whether a socket of process ``pid`` bound to ``address`` is reachable through a
    loopback interface only: bound to a loopback address, or to every address of a namespace
    whose only interface is ``lo``."""
    bound = ipaddress.ip_address(address)
    bound = getattr(bound, "ipv4_mapped", None) or bound  # ::ffff:127.0.0.1
    return bound.is_loopback or (bound.is_unspecified and interfaces(pid) == {"lo"})
