"""What one generation reports: the metric columns and their meaning, the rows of
metrics.csv / metrics.jsonl and state.pt's "status" (docs/architecture.md lists them)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any


@dataclass
class GenerationStatus:
    """One row of metrics.csv / metrics.jsonl, in column order; what the loggers receive."""

    generation: int  # generations done in total (a resumed run counts on)
    popsize: int  # solutions evaluated in this generation
    mean_eval: float  # their mean fitness (mean return over problem.num_episodes)
    median_eval: float  # their median fitness
    pop_best_eval: float  # their best fitness (max, or min when minimizing)
    best_sample_eval: float  # the best fitness of any solution so far
    center_eval: float | None  # the center's mean return on eval_episodes seeded test episodes
    # (None: not evaluated in this generation; eval_every)
    center_eval_length: float | None  # those test episodes' mean length in steps (None: as above)
    nonfinite_center_evals: int  # center evaluations so far that met a NaN or infinity
    restarts: int  # times the search started again from a new start (restart.patience)
    total_interaction_count: int  # env steps of training so far (autoreset steps not counted)
    total_episode_count: int  # training episodes so far
    stdev_mean: float  # the search distribution's mean standard deviation
    episode_return_min: float  # over the training episodes that ended in this generation
    episode_return_mean: float
    episode_return_max: float
    episode_length_min: float
    episode_length_mean: float
    episode_length_max: float
    interactions: int  # env steps of training in this generation
    elapsed_s: float  # wall time of the run so far, resumed parts included
    steps_per_s: float  # interactions per second of this generation (center evaluation included)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> GenerationStatus:
        return cls(**{field.name: values[field.name] for field in fields(cls)})
