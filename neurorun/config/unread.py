"""Settings a run's other choices leave unread, said with one warning each (the run goes on):
`algo.*` that the algorithm's other options leave unread, `network.network_args` keys the
network string does not use, `restart.*` that the strategy does not use, `problem.*` that the
env's backend does not read, and `problem.initial_bounds` beside `algo.center_init`. The
config checks (`config/checks.py`) call it as a run starts."""

from __future__ import annotations

import difflib
import logging

from neurorun.algorithms.gaussian import NESStepOptions
from neurorun.common.user_code import is_import_path
from neurorun.common.values import shown
from neurorun.config.machine import resolved_backend
from neurorun.config.schema import ProblemConfig, RestartConfig, RunConfig
from neurorun.loggers.console import warn_now
from neurorun.nets.parser import constant_names


def warn_unread(config: RunConfig) -> None:
    """Say every setting of ``config`` that its other choices leave unread."""
    _warn_unread_algo(config)
    _warn_unread_network_args(config)
    _warn_unread_restart(config)
    _warn_unread_problem(config)
    bounds = config.problem.initial_bounds
    if bounds is not None and config.algo.typed_options.start.center_init is not None:
        warn_now(logging.getLogger("neurorun"), "problem.initial_bounds=%s is ignored: "
                 "algo.center_init sets where the search starts (restarts too). Fix: "
                 "problem.initial_bounds=null, or algo.center_init=null to draw the start "
                 "from the bounds", shown(list(bounds)))


def _warn_unread_algo(config: RunConfig) -> None:
    """Say the algo.* settings the algorithm's other options leave unread."""
    algo, log = config.algo, logging.getLogger("neurorun")
    options = algo.typed_options
    sampling, adaptive, step = options.sampling, options.adaptive, getattr(options, "step", None)
    if sampling.noise_source == "seeds" and sampling.noise_table_size is not None:
        warn_now(log, "algo.noise_table_size=%s is ignored: algo.noise_source=seeds draws each "
                 "sample from a seed of its own, with no table. Fix: algo.noise_source=table to "
                 "use a table, or algo.noise_table_size=null", sampling.noise_table_size)
    if adaptive.popsize_max is not None and adaptive.num_interactions is None:
        warn_now(log, "algo.popsize_max=%s is ignored: only an adaptive popsize reads it, and "
                 "algo.num_interactions is null. Fix: algo.num_interactions=<env steps a "
                 "generation takes> to adapt the popsize, or algo.popsize_max=null",
                 adaptive.popsize_max)
    elif adaptive.popsize_max is not None and algo.popsize is not None \
            and adaptive.popsize_max < 2 * algo.popsize:  # rounds are whole: never a second
        warn_now(log, "algo.num_interactions=%s is ignored: a generation samples whole rounds "
                 "of algo.popsize=%s, and algo.popsize_max=%s leaves room for one. Fix: "
                 "algo.popsize_max=%s or more to adapt the popsize, or "
                 "algo.num_interactions=null", adaptive.num_interactions, algo.popsize,
                 adaptive.popsize_max, 2 * algo.popsize)
    if isinstance(step, NESStepOptions) and step.stdev_learning_rate is None \
            and not step.scale_learning_rate:
        warn_now(log, "algo.scale_learning_rate=false is ignored: it says how a given "
                 "algo.stdev_learning_rate is read, and none is given (the default rate is "
                 "used). Fix: algo.stdev_learning_rate=<rate> to give one, or leave "
                 "algo.scale_learning_rate out")


def _warn_unread_network_args(config: RunConfig) -> None:
    """Say the network.network_args keys a network string does not use (a factory's are its
    keyword arguments: it refuses one it lacks)."""
    spec, args = config.network.spec, config.network.network_args
    if not isinstance(spec, str) or is_import_path(spec) or not args:
        return
    used = constant_names(spec)
    if used is None:
        return
    for key in sorted(set(args) - used):
        close = difflib.get_close_matches(key, sorted(used), n=1)
        fix = (f"network.network_args.{close[0]}={shown(args[key])} if that is the one meant"
               if close else f"use it in network.spec, or drop it with ~network.network_args.{key}")
        warn_now(logging.getLogger("neurorun"), "network.network_args.%s=%s is ignored: "
                 "network.spec does not use it. Fix: %s", key, shown(args[key]), fix)


def _warn_unread_restart(config: RunConfig) -> None:
    """Say the restart.* settings the others leave unread."""
    restart, default, log = config.restart, RestartConfig(), logging.getLogger("neurorun")
    if restart.patience is None:
        for key in ("min_improvement", "popsize_factor"):
            if getattr(restart, key) != getattr(default, key):
                warn_now(log, "restart.%s=%s is ignored: restart.patience=null never restarts. "
                         "Fix: restart.patience=5 to restart a stalled search, or leave "
                         "restart.%s out", key, getattr(restart, key), key)
    elif restart.strategy == "same" and restart.popsize_factor != default.popsize_factor:
        warn_now(log, "restart.popsize_factor=%s is ignored: restart.strategy=same restarts "
                 "at the same popsize. Fix: restart.strategy=ipop (or bipop) to grow it, or "
                 "leave restart.popsize_factor out", restart.popsize_factor)


# the problem.* keys only some backends read: who reads them, and whether a backend does
_COMPILED = ("brax and Playground envs (their compiled evaluation)",
             lambda backend: backend.is_jax)
_BACKEND_KEYS = {
    "jit": _COMPILED,
    "devices": _COMPILED,
    "vectorization": ("gymnasium's vector envs",
                      lambda backend: backend.episode_ending_vectorizations is not None),
}


def _warn_unread_problem(config: RunConfig) -> None:
    """Say the problem.* settings the env's backend leaves unread (e.g. problem.jit=false on
    EnvPool)."""
    problem, default = config.problem, ProblemConfig()
    changed = [key for key in _BACKEND_KEYS if getattr(problem, key) != getattr(default, key)]
    resolved = resolved_backend(config) if changed else None  # may import EnvPool: only then
    if resolved is None:
        return
    backend = resolved[1]
    for key in changed:
        readers, reads = _BACKEND_KEYS[key]
        if not reads(backend):
            warn_now(logging.getLogger("neurorun"), "problem.%s=%s is ignored: it is for %s, "
                     "and env %s runs on %s. Fix: problem.%s=%s (its default)", key,
                     shown(getattr(problem, key)), readers, config.env.id, backend.label, key,
                     shown(getattr(default, key)))
