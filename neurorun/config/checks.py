"""Checking a run's config before anything is built: `validate_config` turns the composed config
into the typed `RunConfig` (neurorun/config/schema.py), once, at the run's entry.

Everything here runs before any environment steps, so a bad config stops the run with one
`ConfigError` that names the key, the value and the fix. Each key is checked alone by its
declaration in the schema; here are the rules between keys, the algorithm's own check of its
options (`SearchAlgorithm.checked_options`) and what depends on this machine
(`config/machine.py`).
`neurorun/loop/build.py` builds the parts of a config that passed.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from neurorun.algorithms import ALGORITHMS, SearchAlgorithm
from neurorun.common.errors import ConfigError, one_line
from neurorun.common.settings import as_keys
from neurorun.common.values import shown
from neurorun.config.machine import check_machine, check_ray_installed, resolved_backend
from neurorun.config.schema import (
    AlgoConfig,
    ParallelConfig,
    ProblemConfig,
    RunConfig,
    load_config,
    refused_on_local,
)
from neurorun.config.unread import warn_unread
from neurorun.loggers.console import warn_now
from neurorun.parallel.distributed import require_distributable
from neurorun.parallel.workload import check_workload


def algo_error(algo: AlgoConfig, error: Exception) -> ConfigError:
    """The algorithm's message, with its option names written as config keys (algo.x)."""
    return ConfigError(f"algo={algo.name}: "
                       f"{as_keys(str(error), (*algo.options, 'popsize'), 'algo')}")


def _raw_value(cfg: DictConfig, key: str) -> Any:
    """The value of ``key`` (a.b[0].c) as written, its `${...}` unresolved."""
    node: Any = OmegaConf.to_container(cfg, resolve=False)
    for part in re.findall(r"[^.\[\]]+", key):
        try:
            node = node[int(part) if isinstance(node, list) else part]
        except (KeyError, IndexError, ValueError, TypeError):
            return None
    return node


def _unresolved(cfg: DictConfig, error: OmegaConfBaseException) -> ConfigError:
    """One line naming the key a `${...}` (or a `???`) of which does not resolve."""
    key = str(error.full_key or "")
    return ConfigError(f"{key}={_raw_value(cfg, key)!r} cannot be resolved "
                       f"({one_line(error, first_line=True)}). "
                       f"Fix: give {key} a value (or an interpolation that resolves; "
                       "`neurorun --cfg job` shows the config).")


def resolve_config(cfg: DictConfig) -> dict[str, Any]:
    """The config as plain values, every `${...}` resolved; a `${...}` that does not resolve or
    a `???` is one ConfigError naming the key (OmegaConf would raise its traceback wherever
    the key is first read, mid-run or in a logger)."""
    try:
        return OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    except OmegaConfBaseException as error:
        raise _unresolved(cfg, error) from None


def read_key(cfg: DictConfig, key: str) -> Any:
    """The value of one dotted ``key`` (None where absent), resolved alone: what the command
    reads before the whole config is (`validate_config`), with resolve_config's one line."""
    try:
        return OmegaConf.select(cfg, key, throw_on_missing=True)
    except OmegaConfBaseException as error:
        raise _unresolved(cfg, error) from None


def distributed_mode(config: RunConfig,
                     algorithm: SearchAlgorithm | type[SearchAlgorithm]) -> bool:
    """Whether this run uses distributed mode: ``algo.distributed`` true or false, or ``auto``
    (the default): on ray when the algorithm distributes (all but full CMA-ES), since its
    update equals the local one and it was never slower (docs/ray.md).

    Raises:
        ConfigError: ``true`` where it cannot run (no ray, full CMA-ES).
    """
    value = config.algo.distributed
    on_ray = config.parallel.name == "ray"
    if value == "auto":
        return on_ray and algorithm.distributable
    if value and not on_ray:
        raise ConfigError("algo.distributed=true: actors sample and return weighted sums, so "
                          "it needs ray. Fix: add parallel=ray (or algo.distributed=false).")
    if value:
        try:
            require_distributable(algorithm)
        except ValueError as error:
            raise ConfigError(str(error)) from error
    return value


def evaluates_center(config: RunConfig) -> bool:
    """Whether the run evaluates its center at all: every eval_every-th generation, so never
    with eval_every=0 or more than its generations."""
    every, generations = config.eval_every, config.generations
    return every > 0 and (generations is None or every <= generations)


def no_center(config: RunConfig) -> str:
    """Why ``config`` evaluates no center, as the keys say it."""
    if config.eval_every == 0:
        return "eval_every=0"
    return f"eval_every={config.eval_every} > generations={config.generations}: none would run"


def _check_stops(config: RunConfig) -> None:
    """A run that stops, and a target it can see."""
    if all(v is None for v in (config.generations, config.max_interactions, config.max_time)):
        raise ConfigError("generations, max_interactions and max_time are all null: the run "
                          "would never stop. Fix: set one, e.g. generations=100.")
    if config.target_score is not None and not evaluates_center(config):
        raise ConfigError(f"target_score={config.target_score} needs center evaluations, but "
                          f"{no_center(config)}. Fix: eval_every=1 (or target_score=null).")
    if config.objective == "neg_interactions_to_target" and config.target_score is None:
        raise ConfigError("objective=neg_interactions_to_target needs a target, but "
                          "target_score=null. Fix: target_score=<score>.")


def _check_restart(config: RunConfig) -> None:
    """restart.*: a strategy that can restart, and a budget that leaves room for it."""
    restart, every = config.restart, config.eval_every
    if restart.patience is None:
        if restart.strategy != "same":
            raise ConfigError(f"restart.strategy={restart.strategy} grows the popsize at each "
                              "restart, but restart.patience=null never restarts. Fix: "
                              "restart.patience=5 (or restart.strategy=same).")
        return
    if every == 0:
        raise ConfigError(f"restart.patience={restart.patience} counts center evaluations, "
                          "but eval_every=0. Fix: eval_every=1 (or restart.patience=null).")
    first = (restart.patience + 1) * every
    if config.generations is not None and first >= config.generations:
        raise ConfigError(f"restart.patience={restart.patience} with eval_every={every}: the "
                          f"first restart could come after generation {first}, but "
                          f"generations={config.generations}. Fix: more generations, a smaller "
                          "restart.patience, or restart.patience=null.")


def _check_normalization(problem: ProblemConfig) -> None:
    """problem.observation_min_variance only where observations are normalized."""
    floor = problem.observation_min_variance
    if not problem.observation_normalization and floor != ProblemConfig().observation_min_variance:
        raise ConfigError(f"problem.observation_min_variance={floor} is the variance floor of "
                          "observation normalization, but problem.observation_normalization="
                          "false. Fix: problem.observation_normalization=true (or leave "
                          "problem.observation_min_variance out).")


def _check_vectorization(config: RunConfig) -> None:
    """problem.vectorization on the backend env.backend resolves to: ``native`` where
    gymnasium has the env's own vector env; a curriculum on vector envs that can end single
    episodes."""
    problem = config.problem
    asked = problem.vectorization == "native" or problem.episode_length_schedule is not None
    resolved = resolved_backend(config) if asked else None
    if resolved is None:
        return
    spec, backend = resolved
    try:
        if problem.episode_length_schedule is not None:
            backend.vectorization_for_cuts(problem.vectorization)
        backend.check_vectorization(spec, problem.vectorization)
    except ValueError as error:
        raise ConfigError(str(error)) from None


RAY_DEFAULTS = {"num_actors": "max"}  # conf/parallel/ray.yaml's where it differs: left there


def _check_parallel(config: RunConfig) -> None:
    """No ray setting on parallel=local (`+parallel.address=auto` would run locally, unread);
    parallel=ray's counts together, by the ray evaluator's own rule (ray stays unloaded)."""
    parallel = config.parallel
    if parallel.name == "local" and not config.resume:  # a ray run resumed here keeps its keys
        unset = ParallelConfig()
        for item in dataclasses.fields(ParallelConfig):
            value = getattr(parallel, item.name)
            if value not in (getattr(unset, item.name), RAY_DEFAULTS.get(item.name)):
                raise ConfigError(refused_on_local(f"parallel.{item.name}={shown(value)}"))
    if parallel.name == "ray":
        try:
            check_workload(parallel.ray_actors, parallel.num_subbatches, parallel.subbatch_size)
        except ValueError as error:
            raise ConfigError(as_keys(str(error), ("num_actors", "num_subbatches",
                                                   "subbatch_size"), "parallel")) from None


def _check_algorithm(config: RunConfig) -> None:
    """The algorithm's own check of its options (all of it that needs no solution length);
    distributed mode."""
    algo = config.algo
    try:
        algo.typed_options  # noqa: B018 (built on first read: the check)
    except (ValueError, TypeError) as error:
        raise algo_error(algo, error) from error
    distributed_mode(config, ALGORITHMS[algo.name])


def validate_config(cfg: DictConfig, *,
                    prepare: Callable[[RunConfig], None] | None = None,
                    machine: bool = True) -> RunConfig:
    """The typed config of ``cfg``, checked without building any environment.

    Args:
        prepare: what the run's entry sets up from the checked keys before this machine is
            asked about them (the host device count: the GPU check of a jax env starts jax).
        machine: check what this machine has too (False: a sweep's jobs checked before any
            runs, in the process that then runs them: jax must not start there yet).

    Raises:
        ConfigError: naming the key, the value and the fix.
    """
    config = load_config(resolve_config(cfg))
    _check_stops(config)
    _check_restart(config)
    _check_normalization(config.problem)
    _check_vectorization(config)
    _check_parallel(config)
    if prepare is not None:
        prepare(config)
    if machine:
        check_machine(config)
    _check_algorithm(config)
    if machine:  # a sweep's jobs are checked up front, their unread settings said as each runs
        warn_unread(config)
        if config.objective == "neg_interactions_to_target" and config.max_interactions is None:
            warn_now(logging.getLogger("neurorun"), "objective=neg_interactions_to_target "
                     "without max_interactions: a run that misses target_score scores -2 x the "
                     "steps it took, so a short miss can outrank a late hit. Fix: "
                     "max_interactions=<the budget of every run>")
    check_ray_installed(config)  # last: the checks above need no ray
    return config
