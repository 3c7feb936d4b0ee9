"""The resume record, a run folder's ``checkpoints/state.pt``: its fields (:class:`RunState`)
and the checks a loaded one passes before a run continues from it.

state.pt loads as plain data (``torch.load(weights_only=True)``), but plain data can still lie:
a negative generation, a center of the wrong length, a zero stdev, a counter of 10**40, a
random generator's state its library refuses to load (each is loaded into a throwaway one). A
resumed run checks the record before it builds anything (:func:`check_record`), then the parts
whose layout belongs to the algorithm and the problem against what the freshly built ones save
(:func:`check_layout`, before any env, logger or ray actor starts). Each refusal is one line
naming state.pt, the key and what was expected, and is a config error: resuming again would
fail the same way. The record read here is in the current format (record/format.py reads
older ones into it).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch

from neurorun.algorithms import ALGORITHMS
from neurorun.algorithms.fitness import PopulationStats
from neurorun.algorithms.record import AlgorithmRecord
from neurorun.common.errors import ConfigError
from neurorun.common.saved_values import check_min_variance, check_sums, check_vector
from neurorun.common.seeding import GeneratorsRecord, NumpyRecord, numpy_state, python_state
from neurorun.common.values import is_exact_int, is_exact_number, is_number
from neurorun.problems.evaluator import EvaluatorRecord
from neurorun.problems.running_norm import NormRecord
from neurorun.record.best import BestCenter
from neurorun.record.format import stamped
from neurorun.record.layout import saved_config_path
from neurorun.record.metrics import GenerationStatus
from neurorun.record.record_check import RecordCheck, key_name
from neurorun.record.restart import REGIMES, SMALL_STEP_RANGE, AttemptRecord, RestartRecord


@dataclass
class RunState:
    """A run after its last finished generation: what ``resume=<run>`` continues from, bit for
    bit. Each part is its owner's ``state_dict``, whose keys the owner declares (the type
    beside each field); state.pt holds them with the format (record/format.py), which reads a
    file of an older format into this record."""

    generation: int
    elapsed_s: float  # wall time of the generations so far (the run's clock goes on from it)
    algorithm: AlgorithmRecord
    problem: EvaluatorRecord  # counters, observation statistics, generators
    rng: GeneratorsRecord  # the global generators (seeding.rng_state)
    best: dict[str, Any]  # BestCenter's fields
    best_sample_eval: float | None
    status: dict[str, Any]  # the last GenerationStatus's fields, {} before generation 1
    loggers: dict[str, int]  # the rows each metrics file holds
    seed: int | None  # None: a format-1 run that did not save it (not compared on resume)
    restarts: int
    restart: RestartRecord | None  # None: a format-1 run's, the schedule as built
    restart_due: bool
    stall_history: list[float | None]

    @classmethod
    def from_saved(cls, state: Mapping[str, Any]) -> RunState:
        """The record of a loaded state.pt (upgraded and checked by :func:`check_record`)."""
        return cls(**{f.name: state[f.name] for f in fields(cls)})

    def as_dict(self) -> dict[str, Any]:
        """What state.pt holds (the parts themselves, not copies) and its format."""
        return stamped({f.name: getattr(self, f.name) for f in fields(self)})


def check_record(state: Mapping[str, Any], path: Path) -> None:
    """ConfigError (one line) unless ``state`` (a loaded state.pt) holds the record the runner
    writes: the keys its parts declare, their types, ranges and the counts that must agree with
    each other."""
    check = RecordCheck(path)
    check.record(state, RunState)
    generation = check.count(state["generation"], "generation")
    # a run cannot have run longer than clocks have counted
    check.real(state["elapsed_s"], "elapsed_s", 0.0, time.time())
    if state["seed"] is not None and not is_exact_int(state["seed"]):
        check.refuse("seed", state["seed"], "a whole number")
    restarts = check.count(state["restarts"], "restarts", at_most=generation)
    if state["restart"] is not None:  # None: a format-1 run saved without it
        _check_restart(check, check.record(state["restart"], RestartRecord, "restart"),
                       restarts, generation)
    if type(state["restart_due"]) is not bool:
        check.refuse("restart_due", state["restart_due"], "true or false")
    history = state["stall_history"]
    if not isinstance(history, list):
        check.refuse("stall_history", history, "a list")
    for index, value in enumerate(history):
        check.real(value, f"stall_history[{index}]", optional=True)
    check.real(state["best_sample_eval"], "best_sample_eval", optional=True)
    problem = check.record(state["problem"], EvaluatorRecord, "problem")
    counts = {key: check.count(problem[key], f"problem.{key}")
              for key in ("interaction_count", "episode_count")}
    _check_obs_stats(check, problem["obs_stats"], "problem.obs_stats")
    _check_global_generators(check, check.record(state["rng"], GeneratorsRecord, "rng"))
    length = _check_algorithm(check, check.record(state["algorithm"], AlgorithmRecord,
                                                  "algorithm"), generation)
    _check_best(check, check.record(state["best"], BestCenter, "best"), generation, length)
    status = check.mapping(state, "status")
    _check_status(check, status, counts)
    loggers = check.mapping(state, "loggers")
    for key, value in loggers.items():
        check.count(value, key_name("loggers", key))
    # one status and one metrics row per generation
    for key, value in (("status.generation", status.get("generation")),
                       ("loggers.rows", loggers.get("rows"))):
        if value is not None and value != generation:
            check.refuse("generation", generation, f"the {value} of its {key} (they disagree)")


def _check_global_generators(check: RecordCheck, rng: Mapping[str, Any]) -> None:
    python = rng["python"]
    if not isinstance(python, list):  # [version, internal state, cached normal deviate]
        check.refuse("rng.python", python, "a list (python's random state)")
    check.generator(python, "rng.python", "python's random state",
                    lambda state: random.Random().setstate(python_state(state)))
    numpy = check.record(rng["numpy"], NumpyRecord, "rng.numpy")
    # numpy's legacy generator takes any position and reads past its keys (a segfault)
    check.count(numpy["pos"], "rng.numpy.pos", at_most=624)
    check.count(numpy["has_gauss"], "rng.numpy.has_gauss", at_most=1)
    check.real(numpy["cached"], "rng.numpy.cached")
    check.generator(numpy, "rng.numpy", "numpy's MT19937 state",
                    lambda state: np.random.RandomState().set_state(numpy_state(state)))
    check.torch_generator(rng["torch"], "rng.torch")
    # random.setstate takes any cached normal deviate, and random.gauss would return it
    check.real(python[2], "rng.python[2]", optional=True)
    cuda = rng.get("cuda", [])  # saved on a GPU (restored where one is)
    if not isinstance(cuda, list) or not all(isinstance(item, torch.Tensor) and
                                             item.dtype == torch.uint8 for item in cuda):
        check.refuse("rng.cuda", cuda, "a list of torch.uint8 tensors (a generator's state each)")


def _check_restart(check: RecordCheck, record: Mapping[str, Any], restarts: int,
                   generation: int) -> None:
    """The restart schedule's record (`RestartSchedule.state_dict`)."""
    check.count(record["small_restarts"], "restart.small_restarts", at_most=restarts)
    evaluations = check.mapping(record, "evaluations", "restart")
    for regime in REGIMES:
        check.count(check.item(evaluations, regime, "restart.evaluations"),
                    f"restart.evaluations.{regime}")
    attempt = check.record(record["attempt"], AttemptRecord, "restart.attempt", exact=True)
    check.count(attempt["popsize"], "restart.attempt.popsize", minimum=1)
    check.real(attempt["step_factor"], "restart.attempt.step_factor", SMALL_STEP_RANGE, 1.0)
    if attempt["regime"] not in REGIMES:
        check.refuse("restart.attempt.regime", attempt["regime"], f"one of {list(REGIMES)}")
    if attempt["max_generations"] is not None:
        check.count(attempt["max_generations"], "restart.attempt.max_generations", minimum=1)
    check.count(attempt["generations"], "restart.attempt.generations", at_most=generation)
    check.count(attempt["evaluations"], "restart.attempt.evaluations")


def _check_algorithm(check: RecordCheck, algorithm: Mapping[str, Any], generation: int) -> int:
    """The algorithm's record; returns its solution length."""
    name = algorithm["algorithm"]
    if not isinstance(name, str) or name not in ALGORITHMS:
        check.refuse("algorithm.algorithm", name, f"an algorithm's name ({sorted(ALGORITHMS)})")
    length = check.count(algorithm["solution_length"], "algorithm.solution_length", minimum=1)
    # a restart starts its algorithm's count again
    check.count(algorithm["generation"], "algorithm.generation", at_most=generation)
    check.count(algorithm["draw"], "algorithm.draw", at_most=2**62)
    check.torch_generator(algorithm["rng"], "algorithm.rng")
    # the noise of samples asked and not yet told: the runner saves between generations
    pending = algorithm["pending"]
    if not isinstance(pending, list) or pending:
        check.refuse("algorithm.pending", pending,
                     "[] (a run is saved between generations: no sample asked and not told)")
    last = check.mapping(algorithm, "last", "algorithm")
    if last:  # the last generation's population_stats (none before the first)
        check.record(last, PopulationStats, "algorithm.last", exact=True)
        check.count(last["popsize"], "algorithm.last.popsize", minimum=1)
        for key in ("mean_eval", "median_eval", "pop_best_eval"):  # fitness is never NaN
            if not is_exact_number(last[key]) or math.isnan(last[key]):
                check.refuse(f"algorithm.last.{key}", last[key], "a number (not NaN)")
    _check_search(check, check.mapping(algorithm, "search", "algorithm"), "algorithm.search",
                  ALGORITHMS[name].POSITIVE)
    return length


def _check_search(check: RecordCheck, value: Any, key: str, positive: tuple[str, ...]) -> None:
    """The search's tensors are finite (its step sizes, the algorithm's ``POSITIVE``, > 0);
    its plain numbers (an optimizer's rates, moments and step count) finite and >= 0."""
    if isinstance(value, Mapping):
        for name, item in value.items():
            _check_search(check, item, key_name(key, name), positive)
    elif isinstance(value, torch.Tensor):
        check.tensor(value, key, positive=key.rpartition(".")[2] in positive)
    elif is_exact_int(value):  # a step count
        check.count(value, key)
    elif is_exact_number(value):  # a float
        check.real(value, key, 0.0)


def _check_best(check: RecordCheck, best: Mapping[str, Any], generation: int, length: int) -> None:
    # the runner never keeps a non-finite score as best: None until a finite center evaluation
    check.real(best["score"], "best.score", optional=True)
    check.count(best["generation"], "best.generation", at_most=generation)
    solution = best["solution"]
    if solution is not None:  # a policy file's rule
        check.follows("best", check_vector, "solution", solution, length)
    _check_obs_stats(check, best["obs_stats"], "best.obs_stats")


def _check_obs_stats(check: RecordCheck, stats: Any, key: str) -> None:
    if stats is None:
        return
    stats = check.record(stats, NormRecord, key)
    size = check.count(stats["size"], f"{key}.size", minimum=1)
    check.follows(key, check_min_variance, stats["min_variance"])
    sums = [stats[name] for name in ("count", "sum", "sum_of_squares")]
    check.follows(key, check_sums, *sums, size=size)  # a policy file's rule


def _check_status(check: RecordCheck, status: Mapping[str, Any], counts: Mapping[str, int]) -> None:
    """The last generation's status ({} before generation 1): GenerationStatus's fields."""
    if not status:
        return
    check.record(status, GenerationStatus, "status")
    for field in fields(GenerationStatus):
        key = f"status.{field.name}"
        value = status[field.name]
        if field.type == "int":
            check.count(value, key)
        elif not (is_number(value) or value is None and "None" in str(field.type)):
            check.refuse(key, value, f"a number ({field.type})")
    expected = {"total_interaction_count": counts["interaction_count"],
                "total_episode_count": counts["episode_count"]}
    for name, value in expected.items():
        if status[name] != value:
            check.refuse(f"status.{name}", status[name], f"{value} (as the record's own count)")


def check_layout(state: RunState, algorithm: Any, problem: Any, path: Path) -> None:
    """ConfigError (one line) unless the algorithm's and the problem's parts of ``state`` have
    the layout (keys, tensor shapes and kinds) that this run's freshly built ``algorithm`` and
    ``problem`` save: e.g. a center of 7 values for a network of 10 weights. Those parts are
    built from the run's saved config, so a refusal names it beside the file."""
    config_path = saved_config_path(path.parent.parent)
    check = RecordCheck(path, read_with=config_path)
    saved = state.algorithm
    for key, own in (("algorithm", algorithm.name), ("solution_length", algorithm.solution_length)):
        if saved[key] != own:
            check.refuse(f"algorithm.{key}", saved[key], f"{own!r} (this run's algo and network)")
    _same_layout(check, saved["search"], algorithm.state_dict()["search"], "algorithm.search")
    _same_normalization(state.problem["obs_stats"] is not None,
                        problem.observation_normalization, path, config_path)
    reference = problem.state_dict()
    _same_layout(check, state.problem, reference, "problem")
    own = reference["obs_stats"]
    for key, stats in (("problem.obs_stats", state.problem["obs_stats"]),
                       ("best.obs_stats", state.best["obs_stats"])):
        if stats is not None and own is not None and stats["min_variance"] != own["min_variance"]:
            check.refuse(f"{key}.min_variance", stats["min_variance"],
                         f"{own['min_variance']!r} (this run's problem.observation_min_variance)")
    # the problem's own kinds (e.g. PCG64 and a CUDA generator)
    check.bit_generator(state.problem["rng"], "problem.rng", reference["rng"]["bit_generator"])
    check.torch_generator(state.problem["noise_rng"], "problem.noise_rng", problem.device)
    if state.best["solution"] is not None:
        _same_layout(check, state.best["obs_stats"], reference["obs_stats"],
                     "best.obs_stats")


def _same_normalization(saved: bool, own: bool, path: Path, config_path: Path) -> None:
    """A resume keeps the run's problem.observation_normalization: its state holds observation
    statistics, or none (the config was changed, on the command line or in the saved file)."""
    if saved != own:
        key = "problem.observation_normalization"
        raise ConfigError(
            f"resume: {key}={str(own).lower()}, but the run was started with "
            f"{key}={str(saved).lower()} ({path} holds {'its' if saved else 'no'} observation "
            f"statistics), and a resume cannot change it. Fix: drop {key}= from the command "
            f"line (or set it back to {str(saved).lower()} in {config_path}), or start a new "
            "run in another folder.")


def _same_layout(check: RecordCheck, saved: Any, reference: Any, key: str) -> None:
    """``saved`` has ``reference``'s keys, lengths, types and tensor shapes (a None in the
    reference also takes a plain number: e.g. a random generator's cached value)."""
    if isinstance(reference, torch.Tensor):
        if not isinstance(saved, torch.Tensor) or saved.shape != reference.shape or (
                saved.is_floating_point() != reference.is_floating_point() or
                not reference.is_floating_point() and saved.dtype != reference.dtype):
            check.refuse(key, saved, f"a {reference.dtype} tensor of shape "
                         f"{tuple(reference.shape)}")
    elif isinstance(reference, Mapping):
        if not isinstance(saved, Mapping) or set(saved) != set(reference):
            check.refuse(key, saved if not isinstance(saved, Mapping) else sorted(saved),
                         f"a mapping of {sorted(reference)}")
        for name, value in reference.items():
            _same_layout(check, saved[name], value, key_name(key, name))
    elif isinstance(reference, list | tuple):
        if not isinstance(saved, list | tuple) or len(saved) != len(reference):
            check.refuse(key, saved, f"a list of {len(reference)} items")
        for index, (item, own) in enumerate(zip(saved, reference, strict=True)):
            _same_layout(check, item, own, f"{key}[{index}]")
    elif not _same_kind(saved, reference):
        check.refuse(key, saved, f"a {type(reference).__name__}")


def _same_kind(saved: Any, reference: Any) -> bool:
    if reference is None:
        return saved is None or is_exact_number(saved)
    if type(reference) is float:
        return is_exact_number(saved)
    return type(saved) is type(reference)
