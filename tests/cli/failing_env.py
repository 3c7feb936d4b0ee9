"""An env factory for sweep tests: ``make(num_envs, fail=...)`` gives ToyEnvs that raise in
every ``reset`` (``fail="reset"``), in every ``step`` (``"step"``) or never (``"none"``);
``count_locks(num_envs, out=...)`` writes first how many run-folder locks its process holds."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from gymnasium.vector import SyncVectorEnv

from neurorun.record.layout import LOCK_FILE
from tests.problems.toy_env import ToyEnv

SPEC = "tests.cli.failing_env:make"


class FailingToyEnv(ToyEnv):
    def __init__(self, fail: str = "none", **options):
        super().__init__(**options)
        self.fail = fail

    def reset(self, *, seed=None, options=None):
        if self.fail == "reset":
            raise RuntimeError("toy reset exploded")
        return super().reset(seed=seed, options=options)

    def step(self, action):
        if self.fail == "step":
            raise RuntimeError("toy step exploded")
        return super().step(action)


def make(num_envs: int, fail: str = "none") -> SyncVectorEnv:
    return SyncVectorEnv([lambda: FailingToyEnv(fail) for _ in range(num_envs)])


def open_files() -> list[str]:
    """What this process's descriptors are open on (Linux's /proc; a removed file's name ends
    in " (deleted)")."""
    found = []
    for descriptor in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the listing's own descriptor, closed again
            found.append(os.readlink(f"/proc/self/fd/{descriptor}"))
    return found


def count_locks(num_envs: int, out: str) -> SyncVectorEnv:
    """ToyEnvs, after writing to ``out`` the number of descriptors of this process open on a
    run folder's lock file (a removed folder's lock is still counted)."""
    Path(out).write_text(str(sum(LOCK_FILE in name for name in open_files())))
    return make(num_envs)
