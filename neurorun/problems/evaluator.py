"""``Evaluator``: what the runner asks of whatever evaluates its populations, and
``EvaluationStats``: the figures of one evaluation (its ``last_stats``).

``Problem`` (in this process) and ``neurorun.parallel.RayEvaluator`` (on ray actors) both
satisfy it; ``neurorun.loop.build.make_evaluator`` returns one or the other. A Problem makes the
figures, the ray evaluator merges its sub-batches' and the search step
(``neurorun.loop.generation``) its rounds'.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, Protocol, TypedDict, runtime_checkable

from torch import Tensor

from neurorun.problems.running_norm import NormRecord

# fields that add up over the parts of an evaluation (sub-batches, rounds)
_ADDED = ("num_interactions", "num_episodes", "nonfinite_count", "num_vector_steps",
          "num_simulated_steps", "num_subbatches")
_EPISODE_FIGURES = ("episode_return", "episode_length")  # each with _min, _mean, _max


@dataclass(frozen=True)
class EvaluationStats:
    """The figures of one ``evaluate`` call (or of several, merged)."""

    num_interactions: int = 0  # env steps counted (autoreset steps are not)
    num_episodes: int = 0  # episodes finished
    nonfinite_count: int = 0  # solutions that met a NaN or infinite observation or reward (or a
    # NaN choice score)
    num_vector_steps: int = 0  # env.step calls
    num_simulated_steps: int = 0  # env steps the simulators took (resets, idle envs too)
    # over the episodes that finished (unshaped returns; NaN: none finished)
    episode_return_min: float = math.nan
    episode_return_mean: float = math.nan
    episode_return_max: float = math.nan
    episode_length_min: float = math.nan
    episode_length_mean: float = math.nan
    episode_length_max: float = math.nan
    eval_time_s: float = 0.0  # wall time of the call
    num_subbatches: int = 0  # parts it ran in (a Problem's call: 1; ray: its actors' jobs)

    @classmethod
    def of_episodes(cls, returns: Tensor, lengths: Tensor, **counts: Any) -> EvaluationStats:
        """The figures of an evaluation whose finished episodes had ``returns`` and
        ``lengths`` (float64), with its ``counts`` (the other fields)."""
        figures = {}
        for name, values in zip(_EPISODE_FIGURES, (returns, lengths), strict=True):
            if values.numel():
                figures.update({f"{name}_min": float(values.min()),
                                f"{name}_mean": float(values.mean()),
                                f"{name}_max": float(values.max())})
        return cls(**counts, **figures)

    @classmethod
    def merge(cls, parts: Sequence[EvaluationStats]) -> EvaluationStats:
        """One record of several evaluations: counts added, episode figures over all their
        episodes, ``eval_time_s`` added (ray replaces it with its own wall time)."""
        merged: dict[str, Any] = {key: int(sum(int(getattr(p, key)) for p in parts))
                                  for key in _ADDED}
        merged["eval_time_s"] = sum(p.eval_time_s for p in parts)
        episodes = [int(p.num_episodes) for p in parts]
        total = sum(episodes)
        for name in _EPISODE_FIGURES:
            counted = [(p, n) for p, n in zip(parts, episodes, strict=True) if n]
            lows = [getattr(p, f"{name}_min") for p, _ in counted]
            highs = [getattr(p, f"{name}_max") for p, _ in counted]
            mean = (sum(getattr(p, f"{name}_mean") * n for p, n in counted) / total
                    if total else math.nan)
            merged[f"{name}_min"] = min(lows) if lows else math.nan
            merged[f"{name}_mean"] = mean
            merged[f"{name}_max"] = max(highs) if highs else math.nan
        return cls(**merged)

    def episode_figures(self) -> dict[str, float]:
        """The episode return and length min/mean/max, by field name (the status columns)."""
        return {f.name: getattr(self, f.name) for f in fields(self)
                if f.name.startswith(_EPISODE_FIGURES)}


class EvaluatorRecord(TypedDict):
    """An evaluator's record (``state_dict``): state.pt's ``problem``."""

    interaction_count: int
    episode_count: int
    obs_stats: NormRecord | None  # None: no observation normalization
    rng: dict[str, Any]  # the numpy bit generator's state: the evaluate calls' base seeds
    noise_rng: Tensor  # the torch generator's state: observation noise


@runtime_checkable
class Evaluator(Protocol):
    """Fitness of populations, with the counters and state a checkpoint keeps.

    Attributes:
        solution_length: parameters per solution (the ``D`` of ``evaluate``'s input).
        interaction_count: env steps taken by every ``evaluate`` call so far.
        episode_count: episodes finished by every ``evaluate`` call so far.
        last_stats: figures of the last ``evaluate`` call (episodes, timings, non-finite
            events), merged into the generation's status.
    """

    solution_length: int
    interaction_count: int
    episode_count: int
    last_stats: EvaluationStats

    def evaluate(self, params: Tensor, seed: int | None = None) -> Tensor:
        """Fitness ``(P,)`` of the parameter vectors ``params (P, D)``; ``seed`` is the call's
        base seed (None: the next draw of the evaluator's generator)."""
        ...

    def state_dict(self) -> EvaluatorRecord:
        """What resumes the evaluation: counters, observation statistics, seed generator."""
        ...

    def load_state_dict(self, state: EvaluatorRecord) -> None:
        """Restore what ``state_dict`` returned."""
        ...

    def close(self) -> None:
        """Release the envs (or actors); calling it again does nothing."""
        ...
