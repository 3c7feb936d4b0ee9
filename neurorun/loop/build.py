"""Building a checked run config's parts: the problem, the algorithm and the evaluator, each
from its own sections of the typed config (`neurorun/config/checks.py` makes it)."""

from __future__ import annotations

import copy
import dataclasses
import logging
import os
from typing import TYPE_CHECKING, Any

import torch

from neurorun.algorithms import ALGORITHMS, SearchAlgorithm, make_algorithm
from neurorun.common.errors import ConfigError
from neurorun.common.seeding import derive_seed
from neurorun.config.checks import algo_error, evaluates_center
from neurorun.envs import backend_of, resolve_backend
from neurorun.envs.base import UnknownEnvError
from neurorun.nets import NetworkParseError
from neurorun.nets.network_spec import NetworkFactoryError, NetworkImportError
from neurorun.parallel import make_ray_evaluator
from neurorun.problems import Evaluator, Problem, make_problem
from neurorun.problems.devices import check_xla_flags, host_device_flags

if TYPE_CHECKING:
    from neurorun.config.schema import RunConfig
    from neurorun.loop.restarts import Attempt


def resolve_env_backend(config: RunConfig) -> str | None:
    """The backend ``env.backend=auto`` picks for this run's bare gymnasium id (None: nothing
    to pick); the run writes it into its config, so a resumed run keeps it.

    Raises:
        ConfigError: an unknown backend, one that contradicts env.id, or EnvPool asked for
            but not installed.
    """
    env = config.env
    try:
        spec = resolve_backend(env.id, env.backend)
    except (ValueError, ImportError) as error:
        raise ConfigError(f"env.id={env.id!r}: {error}") from error
    chosen = backend_of(spec)
    if env.backend != "auto" or not chosen.gymnasium_id or "::" in env.id:
        return None
    return "envpool" if chosen.takes_threads else "gymnasium"  # env.backend's two choices


def choose_env_backend(config: RunConfig) -> tuple[RunConfig, str | None]:
    """The config with the backend env.backend=auto picked, and that backend (None: nothing
    picked), which the run folder's saved config records, so a resumed run keeps it."""
    chosen = resolve_env_backend(config)
    if chosen is None:
        return config, None
    return dataclasses.replace(config, env=dataclasses.replace(config.env, backend=chosen)), chosen


def problem_kwargs(config: RunConfig) -> dict[str, Any]:
    """The keywords of `make_problem` for this config (also what ray actors rebuild it from)."""
    env = config.env
    return {"env": resolve_backend(env.id, env.backend), "network": config.network.spec,
            "num_threads": env.num_threads,
            "network_args": copy.deepcopy(config.network.network_args),
            "env_config": copy.deepcopy(env.env_config),
            "seed": derive_seed(config.seed, "problem"),
            **dataclasses.asdict(config.problem)}


def build_algorithm(config: RunConfig, problem: Problem, restart: int = 0,
                    start: Attempt | None = None) -> SearchAlgorithm:
    """The algorithm sized for ``problem``; ``restart`` k > 0: the k-th restart (its own seed
    and, without algo.center_init, its own start drawn from problem.initial_bounds), with the
    popsize and step size factor of its ``start`` (`neurorun.loop.restarts`)."""
    algo = config.algo
    options = copy.deepcopy(algo.options)
    try:
        if algo.typed_options.start.center_init is None:
            generator = torch.Generator().manual_seed(derive_seed(config.seed, "center_init",
                                                                  restart))
            options["center_init"] = problem.sample_initial(1, generator)[0].cpu()
        if start is not None:
            kind = ALGORITHMS[algo.name]
            options = start.options(options, kind.STEP_SIZES, kind.POPSIZE_OPTIONS)
        return make_algorithm(algo.name, solution_length=problem.solution_length,
                              popsize=algo.popsize if start is None else start.popsize,
                              device=problem.device,
                              seed=derive_seed(config.seed, "algorithm", restart), **options)
    except (ValueError, TypeError) as error:
        raise algo_error(algo, error) from error


def build_parts(config: RunConfig) -> tuple[Problem, SearchAlgorithm]:
    """The problem (no environment is started yet) and the algorithm sized for it."""
    try:
        problem = make_problem(**problem_kwargs(config))
    except UnknownEnvError as error:
        raise ConfigError(f"env.id={config.env.id!r}: {error}") from error
    except (NetworkParseError, NetworkFactoryError, NetworkImportError) as error:
        raise ConfigError(f"network.spec={config.network.spec!r}: {error}") from error
    except (ValueError, TypeError, ImportError) as error:
        raise ConfigError(f"env={config.env.id} / problem: {error}") from error
    try:
        algorithm = build_algorithm(config, problem)
    except ConfigError:
        problem.close()
        raise
    try:
        check_generation_fits(config, problem, algorithm)
    except (ValueError, RuntimeError) as error:
        problem.close()
        raise ConfigError(str(error)) from error
    return problem, algorithm


def check_generation_fits(config: RunConfig, problem: Problem,
                          algorithm: SearchAlgorithm) -> None:
    """ValueError or RuntimeError, before anything runs, when a generation of the algorithm
    (its popsize_max when adaptive) and the center evaluation after it would not fit the
    device's memory (``Problem.check_capacity``)."""
    problem.check_capacity(max(algorithm.popsize, algorithm.options.adaptive.popsize_max or 0),
                           config.eval_episodes if evaluates_center(config) else 0)


def make_evaluator(config: RunConfig, problem: Problem) -> Evaluator:
    """What evaluates populations: the problem itself, or (parallel=ray) a `RayEvaluator`
    over a pool of actors; both are `neurorun.problems.Evaluator`s."""
    if config.parallel.name == "local":
        return problem
    try:
        return make_ray_evaluator(config.parallel, problem_kwargs(config), problem=problem)
    except (ValueError, ImportError) as error:
        raise ConfigError(f"parallel: {error}") from error


def use_host_devices(config: RunConfig) -> None:
    """On a jax env, give jax's CPU the host devices ``problem.devices`` asks for (XLA reads
    the count once, when jax starts: before the run builds anything), unless the user's
    XLA_FLAGS force a count; say which count it is (elsewhere the config checks say a count
    or ids given are ignored). The run's entry (``loop.parts.RunParts``) calls it, so
    ``run(cfg)`` from Python sets the count as the command does, where jax has not started
    yet in the process."""
    log = logging.getLogger("neurorun.devices")
    devices = config.problem.devices  # checked with the config
    try:
        jax_env = backend_of(config.env.id).is_jax
        if not jax_env:
            return
        flags, said = host_device_flags(devices, os.environ)
        check_xla_flags(os.environ.get("XLA_FLAGS", "") if flags is None else flags)
    except ValueError as error:  # the run's own checks say it in full
        raise ConfigError(str(error)) from None
    if flags is not None:
        os.environ["XLA_FLAGS"] = flags
    log.info(said)
