"""Tracking servers that accept connections and never answer: an MLflow
`tracking_uri` on such a port held the run silent for 541 s. Now the run says so in one line and
ends; real local servers on loopback, a real `neurorun` command."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.extras("mlflow")

NEURORUN = [str(Path(sys.executable).with_name("neurorun")), "debug=default"]


def serve(answer_head: bool) -> Iterator[int]:
    """A server on a loopback port that accepts every connection and never answers it, or
    (``answer_head``) answers `HEAD /` only, as a server whose front page is up but whose API
    hangs; yields its port."""
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                connection, _ = server.accept()
            except OSError:  # closed: the test ended
                return
            held.append(connection)
            if answer_head and connection.recv(65536).startswith(b"HEAD / "):
                connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n"
                                   b"Connection: close\r\n\r\n")
                connection.close()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield server.getsockname()[1]
    finally:
        server.close()
        for connection in held:
            connection.close()


@pytest.fixture
def silent_server() -> Iterator[int]:
    yield from serve(answer_head=False)


@pytest.fixture
def hanging_api() -> Iterator[int]:
    yield from serve(answer_head=True)


def _run(tmp_path: Path, port: int, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    return subprocess.run([*NEURORUN, "logger.mlflow.enabled=true",
                           f"logger.mlflow.tracking_uri=http://127.0.0.1:{port}", *args,
                           "hydra.run.dir=run"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=240)  # it ran 541 s before


def test_a_server_that_never_answers_is_refused_in_one_line(tmp_path, silent_server):
    done = _run(tmp_path, silent_server)
    assert done.returncode == 2, done.stderr[-3000:]
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("neurorun: config")]
    assert line.startswith("neurorun: config error: logger.mlflow could not start "
                           f"(ConnectionError: no tracking server answers at 127.0.0.1:"
                           f"{silent_server} (timed out)). Fix: check logger.mlflow.tracking_uri")
    assert "Traceback" not in done.stderr and not (tmp_path / "run").exists()


def test_a_server_whose_api_never_answers_is_bounded_by_timeout_s(tmp_path, hanging_api):
    done = _run(tmp_path, hanging_api, "logger.mlflow.timeout_s=2")
    assert done.returncode == 2, done.stderr[-3000:]
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("neurorun: config")]
    assert line == ("neurorun: config error: logger.mlflow did not answer within 2 s as it "
                    "started. Fix: check the server of logger.mlflow.tracking_uri="
                    f"'http://127.0.0.1:{hanging_api}', raise logger.mlflow.timeout_s, or set "
                    "logger.mlflow.enabled=false.")
    assert "Traceback" not in done.stderr and not (tmp_path / "run").exists()
