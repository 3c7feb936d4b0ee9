"""A network namespace of its own, holding only a loopback interface, for what tests start.

    python tests/network_namespace.py -- <command>   # the command in a namespace of its own
    python tests/network_namespace.py --hold         # (inside one) loopback up, then wait

ray 2.60's servers listen on every interface whatever they are told (its GCS and raylets on
``[::]``, a helper on the machine's address): no ray setting holds them to loopback. In a
network namespace of its own only a loopback interface exists, so what the tests start (ray
heads, local rays, tracker servers) is reachable from nothing outside it. ``make test`` runs
the suite so where the machine allows it (root, or unprivileged user namespaces); elsewhere it
says so and runs the suite as it is. ``unshare`` makes the namespace (util-linux); its
loopback interface starts down and is brought up here by ioctl (no ``ip`` needed).
"""

from __future__ import annotations

import fcntl
import os
import socket
import struct
import subprocess
import sys

# root makes namespaces; anyone else first a user namespace where they are root
USER_NS = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1


def loopback_up() -> None:
    """Bring this namespace's loopback interface up."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        got = fcntl.ioctl(sock, SIOCGIFFLAGS, struct.pack("16sH14x", b"lo", 0))
        flags = struct.unpack_from("16sH", got)[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | IFF_UP))


def unshare(argv: list[str]) -> list[str]:
    """``argv`` run by this script in a new network namespace (loopback up first)."""
    return ["unshare", "--net", *USER_NS, sys.executable, os.path.abspath(__file__),
            "--inside", "--", *argv]


def main(args: list[str]) -> None:
    if args[:1] == ["--hold"]:
        loopback_up()
        print("ready", flush=True)
        sys.stdin.read()
        return
    if args[:1] == ["--inside"]:
        loopback_up()
        argv = args[2:]
        os.execvp(argv[0], argv)
    argv = args[1:] if args[:1] == ["--"] else args
    probe = subprocess.run(unshare(["true"]), capture_output=True, text=True)
    if probe.returncode == 0:
        os.execvp("unshare", unshare(argv))
    why = (probe.stderr.strip().splitlines() or ["unshare failed"])[-1]
    print(f"tests: no network namespace of their own here ({why}): the servers they start "
          "listen on this machine's interfaces", file=sys.stderr)
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main(sys.argv[1:])
