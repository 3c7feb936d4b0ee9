"""An env factory that talks as some libraries do while they build an env: an INFO record on
the root logger (MJX's "Using JAX default device: cpu:0.") and a UserWarning raised in an
installed package's own file (brax's "not actively being maintained"), here from code
compiled under a file name in site-packages."""

from __future__ import annotations

import logging
import sysconfig
from pathlib import Path

from gymnasium.vector import SyncVectorEnv

from tests.problems.toy_env import ToyEnv

SPEC = "tests.cli.chatty_env:make"
ROOT_LINE = "Using JAX default device: cpu:0."
WARNING = "this package is not actively being maintained"
_PACKAGE_FILE = str(Path(sysconfig.get_path("purelib")) / "chatty_package" / "io.py")
_WARN = compile(f"import warnings\nwarnings.warn({WARNING!r}, UserWarning)\n", _PACKAGE_FILE,
                "exec")


def make(num_envs: int) -> SyncVectorEnv:
    logging.info(ROOT_LINE)
    exec(_WARN, {})
    return SyncVectorEnv([ToyEnv for _ in range(num_envs)])
