"""Settings a run's other choices leave unread, said with one warning each (the run goes on):
`restart.*` that the strategy does not use, `problem.*` that the env's backend does not
read, and `problem.initial_bounds` beside `algo.center_init`. The config checks
(`config/checks.py`) call it as a run starts."""

from __future__ import annotations

import logging

from neurorun.common.values import shown
from neurorun.config.machine import resolved_backend
from neurorun.config.schema import ProblemConfig, RestartConfig, RunConfig
from neurorun.loggers.console import warn_now


def warn_unread(config: RunConfig) -> None:
    """Say every setting of ``config`` that its other choices leave unread."""
    _warn_unread_restart(config)
    _warn_unread_problem(config)
    bounds = config.problem.initial_bounds
    if bounds is not None and config.algo.typed_options.start.center_init is not None:
        warn_now(logging.getLogger("neurorun"), "problem.initial_bounds=%s is ignored: "
                 "algo.center_init sets where the search starts (restarts too). Fix: "
                 "problem.initial_bounds=null, or algo.center_init=null to draw the start "
                 "from the bounds", shown(list(bounds)))


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
