"""A ray cluster started the way users start one (`ray start --head`, then `ray start
--address` per worker node), on loopback, in its own temporary folder and in a network namespace
of its own (``netns``: ray listens on every interface otherwise). Its clients run in that
namespace too (``command``).

Its processes are those of the namespace (``nodes``: the ones each `ray start` call added) and
are stopped by pid, SIGTERM then SIGKILL: never `ray stop`, which would stop every ray on the
machine. With ``RAY_AUTH_MODE=token`` (ray 2.60) every node and client reads the token that
`ray get-auth-token --generate` writes under ``$HOME/.ray``, so the cluster and its clients get
a home of their own in the temporary folder.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.parallel.netns import NetworkNamespace

RAY = shutil.which("ray", path=str(Path(sys.executable).parent)) or "ray"
HEAD_PORT = 6379  # ray's default: free in a namespace of the cluster's own


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _running(pids: set[int]) -> dict[int, int]:
    """pid -> start time of those of ``pids`` still running: a pid alone may be reused by a
    later process, and a zombie (exited, not yet reaped by its parent) is not running."""
    found = {}
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) "
        if fields[0] not in ("Z", "X"):
            found[pid] = int(fields[19])  # field 22 of proc(5): the start time
    return found


class LocalCluster:
    """A head with ``head_cpus`` CPUs and one worker node per entry of ``worker_cpus``."""

    def __init__(self, folder: Path, head_cpus: int = 1, worker_cpus: tuple[int, ...] = (1,)):
        self.folder = Path(folder)
        # ray's session folders, under /tmp itself: its sockets' paths must stay within
        # AF_UNIX's 107 bytes, which pytest's (and pytest-xdist's) tmp_path can pass
        self.temp = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
        self.home = self.folder / "home"
        self.address = f"127.0.0.1:{HEAD_PORT}"
        self.head_cpus, self.worker_cpus = head_cpus, worker_cpus
        self.netns: NetworkNamespace | None = None
        self.nodes: list[dict[int, int]] = []  # pid -> start time of the processes each
        # `ray start` added: head first

    @property
    def env(self) -> dict[str, str]:
        """The environment of the cluster's processes and of their clients."""
        return {**os.environ, "HOME": str(self.home), "RAY_AUTH_MODE": "token",
                "RAY_USAGE_STATS_ENABLED": "0"}

    def command(self, argv: list[str]) -> list[str]:
        """``argv`` run where the cluster can be reached: in its network namespace."""
        assert self.netns is not None, "start the cluster first"
        return self.netns.command(argv)

    def ray(self, *args: str, timeout: float = 180) -> str:
        done = subprocess.run(self.command([RAY, *args]), capture_output=True, text=True,
                              env=self.env, timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"ray {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
        return done.stdout

    def _start(self, *args: str) -> None:
        before = self._processes()
        self.ray("start", "--node-ip-address=127.0.0.1", "--disable-usage-stats", *args)
        time.sleep(1.0)  # the node's helper processes start right after `ray start` returns
        self.nodes.append({pid: start for pid, start in self._processes().items()
                           if before.get(pid) != start})

    def start(self) -> LocalCluster:
        self.home.mkdir(parents=True, exist_ok=True)
        self.netns = NetworkNamespace()
        self.ray("get-auth-token", "--generate")  # into $HOME/.ray, as a user's first start
        self._start("--head", f"--port={HEAD_PORT}", f"--num-cpus={self.head_cpus}",
                    f"--temp-dir={self.temp}", "--include-dashboard=false")
        for cpus in self.worker_cpus:
            self._start(f"--address={self.address}", f"--num-cpus={cpus}")
        return self

    def kill_node(self, index: int) -> None:
        """SIGKILL worker node ``index`` (1: the first worker), as a lost machine."""
        running = _running(set(self.nodes[index]))
        for pid, start in self.nodes[index].items():
            if running.get(pid) == start:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)

    def _processes(self) -> dict[int, int]:
        return _running(self.netns.members()) if self.netns else {}

    def alive(self) -> list[int]:
        """The processes of the cluster's namespace still running: its nodes' and the drivers'
        and actors' of its clients."""
        return sorted(self._processes())

    def stop(self) -> None:
        for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 10.0)):
            for pid in self.alive():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            deadline = time.monotonic() + wait
            while self.alive() and time.monotonic() < deadline:
                time.sleep(0.2)
        if self.netns:
            self.netns.close()

    def __enter__(self) -> LocalCluster:
        try:
            return self.start()
        except BaseException:
            self.__exit__()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()
        shutil.rmtree(self.temp, ignore_errors=True)
