"""Building a checked run config's parts: the problem, the algorithm and the evaluator
(`neurorun/config/checks.py` checks the config first)."""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

import torch
from omegaconf import DictConfig, OmegaConf, open_dict

from neurorun.common.errors import ConfigError
from neurorun.common.seeding import derive_seed
from neurorun.config.checks import algo_error, algo_options

if TYPE_CHECKING:  # heavy modules (torch envs, ray) load when a run builds its parts
    from neurorun.algorithms import SearchAlgorithm
    from neurorun.loop.restarts import Attempt
    from neurorun.problems import Evaluator, Problem


def resolve_env_backend(cfg: DictConfig) -> str | None:
    """Fix `env.backend=auto` to the backend this run uses, so a resumed run keeps it.

    Returns the backend chosen by `auto` (None when nothing was chosen here).

    Raises:
        ConfigError: an unknown backend, one that contradicts env.id, or EnvPool asked for
            but not installed.
    """
    from neurorun.envs import backend_of, resolve_backend

    backend = OmegaConf.select(cfg, "env.backend", default="auto")
    try:
        spec = resolve_backend(cfg.env.id, backend)
    except (ValueError, ImportError) as error:
        raise ConfigError(f"env.id={cfg.env.id!r}: {error}") from error
    chosen = backend_of(spec)
    if backend != "auto" or not chosen.gymnasium_id or "::" in str(cfg.env.id):
        return None
    name = "envpool" if chosen.takes_threads else "gymnasium"  # env.backend's two choices
    with open_dict(cfg):
        cfg.env.backend = name
    return name


def problem_kwargs(cfg: DictConfig) -> dict[str, Any]:
    """The keywords of `make_problem` for this config (also what ray actors rebuild it from)."""
    from neurorun.envs import resolve_backend

    spec = resolve_backend(cfg.env.id, OmegaConf.select(cfg, "env.backend", default="auto"))
    return {"env": spec, "network": cfg.network.spec,
            "num_threads": OmegaConf.select(cfg, "env.num_threads", default=None),
            "network_args": OmegaConf.to_container(cfg.network.network_args, resolve=True),
            "env_config": OmegaConf.to_container(cfg.env.env_config, resolve=True),
            "seed": derive_seed(int(cfg.seed), "problem"),
            **OmegaConf.to_container(cfg.problem, resolve=True)}


def build_algorithm(cfg: DictConfig, problem: Problem, restart: int = 0,
                    start: Attempt | None = None) -> SearchAlgorithm:
    """The algorithm sized for ``problem``; ``restart`` k > 0: the k-th restart (its own seed
    and, without algo.center_init, its own start drawn from problem.initial_bounds), with the
    popsize and step size factor of its ``start`` (`neurorun.loop.restarts`)."""
    from neurorun.algorithms import make_algorithm

    seed = int(cfg.seed)
    options = algo_options(cfg)
    if options.get("center_init") is None:
        generator = torch.Generator().manual_seed(derive_seed(seed, "center_init", restart))
        options["center_init"] = problem.sample_initial(1, generator)[0].cpu()
    if start is not None:
        options = start.options(options)
    try:
        return make_algorithm(cfg.algo.name, solution_length=problem.solution_length,
                              popsize=cfg.algo.popsize if start is None else start.popsize,
                              device=problem.device,
                              seed=derive_seed(seed, "algorithm", restart), **options)
    except (ValueError, TypeError) as error:
        raise algo_error(cfg, error) from error


def build_parts(cfg: DictConfig) -> tuple[Problem, SearchAlgorithm]:
    """The problem (no environment is started yet) and the algorithm sized for it."""
    from neurorun.envs import UnknownEnvError
    from neurorun.nets import NetworkParseError
    from neurorun.nets.network_spec import NetworkFactoryError
    from neurorun.problems import make_problem

    try:
        problem = make_problem(**problem_kwargs(cfg))
    except UnknownEnvError as error:
        raise ConfigError(f"env.id={cfg.env.id!r}: {error}") from error
    except (NetworkParseError, NetworkFactoryError) as error:
        raise ConfigError(f"network.spec={cfg.network.spec!r}: {error}") from error
    except (ValueError, TypeError, ImportError) as error:
        raise ConfigError(f"env={cfg.env.id} / problem: {error}") from error
    try:
        algorithm = build_algorithm(cfg, problem)
    except ConfigError:
        problem.close()
        raise
    try:
        check_generation_fits(cfg, problem, algorithm)
    except (ValueError, RuntimeError) as error:
        problem.close()
        raise ConfigError(str(error)) from error
    return problem, algorithm


def check_generation_fits(cfg: DictConfig, problem: Problem, algorithm: SearchAlgorithm) -> None:
    """ValueError or RuntimeError, before anything runs, when a generation of the algorithm
    (its popsize_max when adaptive) and the center evaluation after it would not fit the
    device's memory (``Problem.check_capacity``)."""
    problem.check_capacity(max(algorithm.popsize, algorithm.popsize_max or 0),
                           int(cfg.eval_episodes) if cfg.eval_every else 0)


def make_evaluator(cfg: DictConfig, problem: Problem) -> Evaluator:
    """What evaluates populations: the problem itself, or (parallel=ray) a `RayEvaluator`
    over a pool of actors; both are `neurorun.problems.Evaluator`s."""
    parallel = OmegaConf.to_container(cfg.parallel, resolve=True)
    name = parallel.get("name", "local")
    if name == "local":
        return problem
    if name == "ray":
        from neurorun.parallel import make_ray_evaluator

        try:
            return make_ray_evaluator(parallel, problem_kwargs(cfg), problem=problem)
        except (ValueError, ImportError) as error:
            raise ConfigError(f"parallel: {error}") from error
    raise ConfigError(f"parallel.name={name!r}: expected 'local' or 'ray'. Fix: parallel=local.")


def use_host_devices(cfg: DictConfig) -> None:
    """On a jax env, give jax's CPU the host devices ``problem.devices`` asks for (XLA reads
    the count once, when jax starts: before the run builds anything), unless the user's
    XLA_FLAGS force a count; say which count it is. Elsewhere, say that a count or ids given
    are ignored. The run's entry (``loop.runner.run``) calls it, so ``run(cfg)`` from Python
    sets the count as the command does, where jax has not started yet in the process."""
    from neurorun.envs import backend_of
    from neurorun.loggers.console import show_library_messages
    from neurorun.problems.devices import check_devices, host_device_flags

    log = logging.getLogger("neurorun.devices")
    try:
        jax_env = backend_of(str(cfg.env.id)).jax_batch is not None
        devices = check_devices(OmegaConf.select(cfg, "problem.devices", default="auto"))
        if not jax_env:
            if devices != "auto":  # on the console too: the run's own shows messages later
                hide = show_library_messages(quiet=True)
                log.warning("problem.devices=%s is for brax and Playground envs (their "
                            "compiled evaluation): env %s ignores it", devices, cfg.env.id)
                hide()
            return
        flags, said = host_device_flags(devices, os.environ)
    except ValueError as error:  # the run's own checks say it in full
        raise ConfigError(str(error)) from None
    if flags is not None:
        os.environ["XLA_FLAGS"] = flags
    log.info(said)
