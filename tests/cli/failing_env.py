"""An env factory for sweep tests: ``make(num_envs, fail=...)`` gives ToyEnvs that raise in
every ``reset`` (``fail="reset"``), in every ``step`` (``"step"``) or never (``"none"``)."""

from __future__ import annotations

from gymnasium.vector import SyncVectorEnv

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
