"""Option groups of a Problem, validated once."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from neurorun.algorithms.options import MAX_CENTER
from neurorun.common.settings import fits, kind
from neurorun.common.values import is_number
from neurorun.problems.devices import check_devices

REFERENCE_INITIAL_BOUNDS = (-1e-5, 1e-5)  # GymNE's and VecGymNE's default
# Reward shaping per step, summed over a million-step episode into a float32 fitness and
# squared in the fitness statistics (1e24), stays finite up to this size (1e40 made every
# fitness infinite); steps of a schedule fit a float64 exactly.
MAX_SHAPING = 1e6
MAX_STEP = 2**53


@dataclass(frozen=True)
class AliveBonus:
    """A step at time t (from 1 within the episode) gets ``bonus * (t - t0) / (t1 - t0)`` for
    ``t0 <= t < t1`` and ``bonus`` for ``t >= t1``."""

    t0: int
    t1: int
    bonus: float

    @classmethod
    def parse(cls, schedule: Sequence[float] | None) -> AliveBonus | None:
        """``(t, b)`` means ``(t, t, b)``; ``(t0, t1, b)`` as is; None stays None."""
        if schedule is None:
            return None
        items = _items(schedule)
        if len(items) == 2:
            items = [items[0], items[0], items[1]]
        numbers = all(is_number(x) and math.isfinite(x) for x in items)
        steps = numbers and all(0 <= t <= MAX_STEP and t == int(t) for t in items[:2])
        if len(items) != 3 or not steps or abs(items[2]) > MAX_SHAPING:
            # steps count from 1 within an episode
            raise ValueError(f"alive_bonus_schedule={schedule!r}; expected [t, bonus] or "
                             f"[t0, t1, bonus]: whole steps from 0 to {MAX_STEP:.0e}, a bonus "
                             f"up to {MAX_SHAPING:.0e}. Fix: e.g. alive_bonus_schedule=[400,10] "
                             "or null")
        t0, t1, bonus = int(items[0]), int(items[1]), float(items[2])
        if bonus < 0:  # a penalty for staying alive: problem.decrease_rewards_by says that
            raise ValueError(f"alive_bonus_schedule={schedule!r}: a bonus of {bonus:g} < 0. "
                             "Fix: a bonus >= 0 (a per-step penalty is "
                             "decrease_rewards_by=<amount>)")
        if t1 < t0:
            raise ValueError(f"alive_bonus_schedule={schedule!r}: t1={t1} < t0={t0}; expected "
                             "t0 <= t1. Fix: e.g. alive_bonus_schedule=[t0, t1, bonus], t0 <= t1")
        return cls(t0, t1, bonus)


@dataclass(frozen=True)
class EpisodeLengths:
    """An episode-length curriculum: the training episodes are cut after ``at(steps)`` steps,
    ``steps`` being the run's interactions before the ``evaluate`` call (each round of an
    adaptive popsize). ``points`` are (steps, length) with increasing steps; between two
    points the length grows (or shrinks) linearly, rounded down; before the first point it is
    the first's, after the last the last's. The env's own limit and ``episode_length`` still
    end episodes earlier; test episodes are never cut."""

    points: tuple[tuple[int, int], ...]

    @classmethod
    def parse(cls, schedule: Any) -> EpisodeLengths | None:
        """``[[steps, length], ...]``; None stays None."""
        if schedule is None:
            return None
        fix = ("Fix: e.g. episode_length_schedule=[[0,200],[20000000,1000]] (interactions, "
               "episode length), or null")
        points = [_items(p) for p in _items(schedule)]
        whole = all(len(p) == 2 and all(is_number(x) and math.isfinite(x) and x == int(x)
                                        for x in p) for p in points)
        if not points or not whole:
            raise ValueError(f"episode_length_schedule={schedule!r}; expected a list of "
                             f"[steps, length] pairs of whole numbers. {fix}")
        pairs = tuple((int(steps), int(length)) for steps, length in points)
        for steps, length in pairs:
            if not 0 <= steps <= MAX_STEP or not 1 <= length <= MAX_STEP:
                raise ValueError(f"episode_length_schedule={schedule!r}: the point "
                                 f"[{steps}, {length}] is out of range; expected steps from 0 "
                                 f"and a length from 1, both up to {MAX_STEP:.0e}. {fix}")
        if any(b[0] <= a[0] for a, b in itertools.pairwise(pairs)):
            raise ValueError(f"episode_length_schedule={schedule!r}: its steps do not "
                             f"increase; expected each point's steps above the last's. {fix}")
        return cls(pairs)

    def at(self, steps: int) -> int:
        """The training episodes' length after ``steps`` interactions."""
        first_steps, length = self.points[0]
        if steps <= first_steps:
            return length
        for (s0, l0), (s1, l1) in itertools.pairwise(self.points):
            if steps < s1:
                return l0 + (l1 - l0) * (steps - s0) // (s1 - s0)
        return self.points[-1][1]


def _items(value: Any) -> list[Any]:
    """A list or tuple's items (none for anything else)."""
    return list(value) if isinstance(value, Sequence) and not isinstance(value, str) else []


def parse_initial_bounds(bounds: Any) -> tuple[float, float]:
    """``problem.initial_bounds`` as (low, high); None: REFERENCE_INITIAL_BOUNDS."""
    if bounds is None:
        return REFERENCE_INITIAL_BOUNDS
    items = _items(bounds)
    if len(items) != 2 or not all(is_number(x) and abs(x) <= MAX_CENTER  # where centers start
                                  for x in items) or not items[0] <= items[1]:
        raise ValueError(f"initial_bounds={bounds!r}; expected [low, high], low <= high, both "
                         f"within +-{MAX_CENTER:.0e}. Fix: e.g. initial_bounds=[-0.1, 0.1], or "
                         f"null for {list(REFERENCE_INITIAL_BOUNDS)}")
    return float(items[0]), float(items[1])


@dataclass(frozen=True)
class RolloutOptions:
    """How a rollout turns rewards into fitness."""

    num_episodes: int = 1
    decrease_rewards_by: float = 0.0
    alive_bonus: AliveBonus | None = None
    action_noise_stdev: float | None = None
    episode_lengths: EpisodeLengths | None = None  # the training episodes' curriculum

    def __post_init__(self) -> None:
        if self.num_episodes < 1:
            raise ValueError(f"num_episodes={self.num_episodes}; expected at least 1. Fix: "
                             "num_episodes=1")
        if not abs(self.decrease_rewards_by) <= MAX_SHAPING:  # inf, nan: every fitness lost
            raise ValueError(f"decrease_rewards_by={self.decrease_rewards_by}; expected a finite "
                             f"number within +-{MAX_SHAPING:.0e}. Fix: decrease_rewards_by=0.0")
        noise = self.action_noise_stdev
        if noise is not None and not 0 <= noise <= MAX_SHAPING:
            raise ValueError(f"action_noise_stdev={noise}; expected a number from 0 to "
                             f"{MAX_SHAPING:.0e}, or null. Fix: action_noise_stdev=null (no noise)")

    @classmethod
    def parse(cls, num_episodes: Any = 1, decrease_rewards_by: Any = 0.0,
              alive_bonus_schedule: Any = None, action_noise_stdev: Any = None,
              episode_length_schedule: Any = None) -> RolloutOptions:
        """From plain options (a config's `problem.*`); ValueError naming the bad one."""
        for key, value, hint in (("num_episodes", num_episodes, int),
                                 ("decrease_rewards_by", decrease_rewards_by, float | None),
                                 ("action_noise_stdev", action_noise_stdev, float | None)):
            if not fits(value, hint):
                said = kind(hint).removesuffix(" or null")
                raise ValueError(f"{key}={value!r}; expected {said}. Fix: {key}=<{said}>")
        return cls(num_episodes=num_episodes, decrease_rewards_by=float(decrease_rewards_by or 0),
                   alive_bonus=AliveBonus.parse(alive_bonus_schedule),
                   action_noise_stdev=None if action_noise_stdev is None
                   else float(action_noise_stdev),
                   episode_lengths=EpisodeLengths.parse(episode_length_schedule))

    @property
    def shapes_rewards(self) -> bool:
        return self.decrease_rewards_by != 0.0 or self.alive_bonus is not None


PLAIN_ROLLOUT = RolloutOptions()  # test episodes: no noise, no reward shaping


@dataclass(frozen=True)
class EnvOptions:
    """Which environments to build and how."""

    spec: str
    config: Mapping[str, Any] = field(default_factory=dict)
    vectorization: str = "auto"
    episode_length: int | None = None
    max_num_envs: int | None = None
    device: str = "cpu"
    streaming: bool = True
    num_threads: int | None = None
    devices: Any = "auto"  # the jax devices of the compiled evaluation (problems/devices.py)

    def __post_init__(self) -> None:
        check_devices(self.devices)
        if self.max_num_envs is not None and self.max_num_envs < 1:
            raise ValueError(f"max_num_envs={self.max_num_envs}; expected >= 1 or None (one "
                             "env per solution)")
        if self.episode_length is not None and self.episode_length < 1:
            raise ValueError(f"episode_length={self.episode_length}; expected >= 1 or None")


