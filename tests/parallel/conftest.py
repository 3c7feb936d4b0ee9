"""Make ``tests.parallel.toy_factory`` importable by name, here and in ray actors."""

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
RAY_RUNTIME_ENV = {"env_vars": {"PYTHONPATH": ROOT}}  # actors import the toy factory by name
