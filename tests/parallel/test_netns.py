"""The network namespace the test cluster runs in, and the reading of what a process listens on
(``netns``), checked on sockets these tests open themselves."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from tests.parallel.netns import interfaces, listening, loopback_only

SERVE = """
import socket, sys
server = socket.socket(socket.AF_INET6)
server.bind(("::", 0))  # every address, IPv4 too (dual stack), as ray's GCS binds
server.listen()
print(server.getsockname()[1], flush=True)
sys.stdin.read()
"""


def test_listening_reads_the_address_and_port_a_process_listens_on():
    with socket.socket() as server, socket.socket() as client:
        server.bind(("127.0.0.1", 0))
        client.bind(("127.0.0.1", 0))  # bound, not listening: not in the list
        server.listen()
        found = listening(os.getpid())
        assert ("127.0.0.1", server.getsockname()[1]) in found
        assert all(port != client.getsockname()[1] for _, port in found)
        assert loopback_only(os.getpid(), "127.0.0.1")


def test_a_server_in_the_namespace_listens_where_only_loopback_exists(namespace):
    # its stdin closes when the `with` ends, and it exits
    with subprocess.Popen(namespace.command([sys.executable, "-c", SERVE]), text=True,
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE) as server:
        port = int(server.stdout.readline())
        assert namespace.members() == {server.pid}
        assert listening(server.pid) == [("::", port)]
        assert interfaces(server.pid) == {"lo"} and loopback_only(server.pid, "::")
        reached = subprocess.run(namespace.command(
            [sys.executable, "-c", f"import socket; socket.create_connection(('127.0.0.1', "
             f"{port}), timeout=5).close()"]), capture_output=True, text=True, timeout=60)
        assert reached.returncode == 0, reached.stderr  # lo is up: loopback reaches it


def test_a_command_run_in_a_namespace_of_its_own_sees_only_its_loopback_and_it_is_up():
    """`make test` runs the suite so (tests/network_namespace.py): a server bound to every
    address inside answers on loopback there and is on no interface of the machine."""
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "network_namespace.py"
    probe = ("import socket\n"
             "names = [line.split(':')[0].strip() for line in open('/proc/net/dev')][2:]\n"
             "server = socket.socket(); server.bind(('0.0.0.0', 0)); server.listen()\n"
             "socket.create_connection(('127.0.0.1', server.getsockname()[1]), 2).close()\n"
             "print(names)")
    done = subprocess.run([sys.executable, str(script), "--", sys.executable, "-c", probe],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['lo']"
