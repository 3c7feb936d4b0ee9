"""Make ``tests.parallel.toy_factory`` importable by name, here and in ray actors; the
``namespace`` fixture."""

import sys
from pathlib import Path

import pytest

ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
RAY_RUNTIME_ENV = {"env_vars": {"PYTHONPATH": ROOT}}  # actors import the toy factory by name

from tests.parallel.netns import NetworkNamespace  # noqa: E402  (ROOT on the path first)


@pytest.fixture
def namespace():
    """A network namespace of the test's own: only loopback, no route out (``netns``)."""
    made = NetworkNamespace()
    yield made
    made.close()
    assert made.empties(), f"processes outlived the test in its namespace: {made.members()}"
