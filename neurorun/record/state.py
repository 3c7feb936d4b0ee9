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

import random
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch

from neurorun.algorithms import ALGORITHMS
from neurorun.common.errors import ConfigError
from neurorun.common.saved_values import check_sums, check_vector
from neurorun.common.seeding import numpy_state, python_state
from neurorun.common.values import is_exact_int, is_exact_number, is_int, is_number
from neurorun.record.format import stamped
from neurorun.record.layout import saved_config_path
from neurorun.record.metrics import GenerationStatus
from neurorun.record.record_check import RecordCheck, key_name
from neurorun.record.restart import REGIMES, SMALL_STEP_RANGE, AttemptRecord


@dataclass
class RunState:
    """A run after its last finished generation: what ``resume=<run>`` continues from, bit for
    bit. Each part is its owner's ``state_dict``; state.pt holds them with the format
    (record/format.py), which reads a file of an older format into this record."""

    generation: int
    elapsed_s: float  # wall time of the generations so far (the run's clock goes on from it)
    algorithm: dict[str, Any]
    problem: dict[str, Any]  # the evaluator's: counters, observation statistics, generators
    rng: dict[str, Any]  # the global generators (seeding.rng_state)
    best: dict[str, Any]  # record/best.py's BestCenter
    best_sample_eval: float | None
    status: dict[str, Any]  # the last GenerationStatus, {} before generation 1
    loggers: dict[str, int]  # the rows each metrics file holds
    seed: int | None  # None: a format-1 run that did not save it (not compared on resume)
    restarts: int
    restart: dict[str, Any] | None  # restarts.RestartSchedule; None: format 1, as built
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
    writes: its keys, types, ranges and the counts that must agree with each other."""
    check = RecordCheck(path)
    generation = check.count(state["generation"], "generation")
    # a run cannot have run longer than clocks have counted
    check.real(check.item(state, "elapsed_s"), "elapsed_s", 0.0, time.time())
    if check.item(state, "seed") is not None and not is_int(state["seed"]):
        check.refuse("seed", state["seed"], "a whole number")
    restarts = check.count(check.item(state, "restarts"), "restarts", at_most=generation)
    if check.item(state, "restart") is not None:  # None: a format-1 run saved without it
        _check_restart(check, check.mapping(state, "restart"), restarts, generation)
    if type(check.item(state, "restart_due")) is not bool:
        check.refuse("restart_due", state["restart_due"], "true or false")
    history = check.item(state, "stall_history")
    if not isinstance(history, list):
        check.refuse("stall_history", history, "a list")
    for index, value in enumerate(history):
        check.real(value, f"stall_history[{index}]", optional=True)
    check.real(check.item(state, "best_sample_eval"), "best_sample_eval", optional=True)
    problem = check.mapping(state, "problem")
    counts = {key: check.count(check.item(problem, key, "problem"), f"problem.{key}")
              for key in ("interaction_count", "episode_count")}
    _check_obs_stats(check, problem.get("obs_stats"), "problem.obs_stats")
    _check_global_generators(check, check.mapping(state, "rng"))
    length = _check_algorithm(check, check.mapping(state, "algorithm"), generation)
    _check_best(check, check.mapping(state, "best"), generation, length)
    status = check.mapping(state, "status")
    _check_status(check, status, counts)
    loggers = check.mapping(state, "loggers")
    for key, value in loggers.items():
        check.count(value, key_name("loggers", key))
    # one status and one metrics row per generation
    for key, value in (("status.generation", status.get("generation")),
                       ("loggers.rows", loggers.get("rows"))):
        if value is not None and value != generation:
            check.refuse("generation", generation, f"{value} (its {key})")


def _check_global_generators(check: RecordCheck, rng: Mapping[str, Any]) -> None:
    python = check.item(rng, "python", "rng")
    if not isinstance(python, list):  # [version, internal state, cached normal deviate]
        check.refuse("rng.python", python, "a list (python's random state)")
    check.generator(python, "rng.python", "python's random state",
                    lambda state: random.Random().setstate(python_state(state)))
    numpy = check.mapping(rng, "numpy", "rng")
    # numpy's legacy generator takes any position and reads past its keys (a segfault)
    check.count(check.item(numpy, "pos", "rng.numpy"), "rng.numpy.pos", at_most=624)
    check.count(check.item(numpy, "has_gauss", "rng.numpy"), "rng.numpy.has_gauss", at_most=1)
    check.real(check.item(numpy, "cached", "rng.numpy"), "rng.numpy.cached")
    check.generator(numpy, "rng.numpy", "numpy's MT19937 state",
                    lambda state: np.random.RandomState().set_state(numpy_state(state)))
    check.torch_generator(check.item(rng, "torch", "rng"), "rng.torch")
    # random.setstate takes any cached normal deviate, and random.gauss would return it
    check.real(python[2], "rng.python[2]", optional=True)
    cuda = rng.get("cuda", [])  # saved on a GPU (restored where one is)
    if not isinstance(cuda, list) or not all(isinstance(item, torch.Tensor) and
                                             item.dtype == torch.uint8 for item in cuda):
        check.refuse("rng.cuda", cuda, "a list of torch.uint8 tensors (a generator's state each)")


def _check_restart(check: RecordCheck, record: Mapping[str, Any], restarts: int,
                   generation: int) -> None:
    """The restart schedule's record (`RestartSchedule.state_dict`)."""
    check.count(check.item(record, "small_restarts", "restart"), "restart.small_restarts",
                at_most=restarts)
    evaluations = check.mapping(record, "evaluations", "restart")
    for regime in REGIMES:
        check.count(check.item(evaluations, regime, "restart.evaluations"),
                    f"restart.evaluations.{regime}")
    attempt = check.mapping(record, "attempt", "restart")
    check.count(check.item(attempt, "popsize", "restart.attempt"), "restart.attempt.popsize",
                minimum=1)
    check.real(check.item(attempt, "step_factor", "restart.attempt"),
               "restart.attempt.step_factor", SMALL_STEP_RANGE, 1.0)
    if check.item(attempt, "regime", "restart.attempt") not in REGIMES:
        check.refuse("restart.attempt.regime", attempt["regime"], f"one of {list(REGIMES)}")
    if check.item(attempt, "max_generations", "restart.attempt") is not None:
        check.count(attempt["max_generations"], "restart.attempt.max_generations", minimum=1)
    check.count(check.item(attempt, "generations", "restart.attempt"),
                "restart.attempt.generations", at_most=generation)
    check.count(check.item(attempt, "evaluations", "restart.attempt"),
                "restart.attempt.evaluations")
    if set(attempt) != {f.name for f in fields(AttemptRecord)}:
        check.refuse("restart.attempt", sorted(attempt),
                     f"the keys {sorted(asdict(AttemptRecord(1)))}")


def _check_algorithm(check: RecordCheck, algorithm: Mapping[str, Any], generation: int) -> int:
    """The algorithm's record; returns its solution length."""
    name = check.item(algorithm, "algorithm", "algorithm")
    if not isinstance(name, str) or name not in ALGORITHMS:
        check.refuse("algorithm.algorithm", name, f"an algorithm's name ({sorted(ALGORITHMS)})")
    length = check.count(check.item(algorithm, "solution_length", "algorithm"),
                         "algorithm.solution_length", minimum=1)
    # a restart starts its algorithm's count again
    check.count(check.item(algorithm, "generation", "algorithm"), "algorithm.generation",
                at_most=generation)
    check.count(check.item(algorithm, "draw", "algorithm"), "algorithm.draw", at_most=2**62)
    check.torch_generator(check.item(algorithm, "rng", "algorithm"), "algorithm.rng")
    # the noise of samples asked and not yet told: the runner saves between generations
    pending = check.item(algorithm, "pending", "algorithm")
    if not isinstance(pending, list) or pending:
        check.refuse("algorithm.pending", pending,
                     "[] (a run is saved between generations: no sample asked and not told)")
    check.mapping(algorithm, "last", "algorithm")
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
    check.real(check.item(best, "score", "best"), "best.score", optional=True)
    check.count(check.item(best, "generation", "best"), "best.generation", at_most=generation)
    solution = check.item(best, "solution", "best")
    if solution is not None:  # a policy file's rule
        check.follows("best", check_vector, "solution", solution, length)
    _check_obs_stats(check, check.item(best, "obs_stats", "best"), "best.obs_stats")


def _check_obs_stats(check: RecordCheck, stats: Any, key: str) -> None:
    if stats is None:
        return
    if not isinstance(stats, Mapping):
        check.refuse(key, stats, "a mapping or None")
    size = check.count(check.item(stats, "size", key), f"{key}.size", minimum=1)
    check.real(check.item(stats, "min_variance", key), f"{key}.min_variance", 0.0)
    sums = [check.item(stats, name, key) for name in ("count", "sum", "sum_of_squares")]
    check.follows(key, check_sums, *sums, size=size)  # a policy file's rule


def _check_status(check: RecordCheck, status: Mapping[str, Any], counts: Mapping[str, int]) -> None:
    """The last generation's status ({} before generation 1): GenerationStatus's fields."""
    if not status:
        return
    for field in fields(GenerationStatus):
        key = f"status.{field.name}"
        value = check.item(status, field.name, "status")
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
    ``problem`` save: e.g. a center of 7 values for a network of 10 weights."""
    check = RecordCheck(path)
    saved = state.algorithm
    for key, own in (("algorithm", algorithm.name), ("solution_length", algorithm.solution_length)):
        if saved[key] != own:
            check.refuse(f"algorithm.{key}", saved[key], f"{own!r} (this run's algo and network)")
    _same_layout(check, saved["search"], algorithm.state_dict()["search"], "algorithm.search")
    _same_normalization(state.problem.get("obs_stats") is not None,
                        problem.observation_normalization, path)
    reference = problem.state_dict()
    _same_layout(check, state.problem, reference, "problem")
    # the problem's own kinds (e.g. PCG64 and a CUDA generator)
    check.bit_generator(state.problem["rng"], "problem.rng", reference["rng"]["bit_generator"])
    check.torch_generator(state.problem["noise_rng"], "problem.noise_rng", problem.device)
    if state.best["solution"] is not None:
        _same_layout(check, state.best["obs_stats"], reference["obs_stats"],
                     "best.obs_stats")


def _same_normalization(saved: bool, own: bool, path: Path) -> None:
    """A resume keeps the run's problem.observation_normalization: its state holds observation
    statistics, or none (the config was changed, on the command line or in the saved file)."""
    if saved != own:
        key = "problem.observation_normalization"
        raise ConfigError(
            f"resume: {key}={str(own).lower()}, but the run was started with "
            f"{key}={str(saved).lower()} ({path} holds {'its' if saved else 'no'} observation "
            f"statistics), and a resume cannot change it. Fix: drop {key}= from the command "
            f"line (or set it back to {str(saved).lower()} in "
            f"{saved_config_path(path.parent.parent)}), or start a new run in another folder.")


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
