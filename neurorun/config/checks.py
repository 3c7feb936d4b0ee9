"""Checking a run's config before anything is built (`validate_config`).

Everything here runs before any environment steps, so a bad config stops the run with one
`ConfigError` that names the key, the value and the fix. The schema is the packaged configs'
keys in OmegaConf's struct mode; a rule a library part enforces itself (rollout options, the
backend table's episode length and extra, ray's actor restarts) is that part's function,
called here. `neurorun/loop/build.py` builds the parts of a config that passed.
"""

from __future__ import annotations

import contextlib
import difflib
import logging
import math
import re
from collections.abc import Iterator
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

import torch
from hydra.plugins.config_source import ConfigSource
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigKeyError, ConfigTypeError, OmegaConfBaseException

from neurorun.common.errors import ConfigError
from neurorun.common.extras import MissingExtraError, require
from neurorun.config.schema import (
    RESTART_DEFAULTS,
    check_strategy,
    objective_error,
    restart_settings,
)

if TYPE_CHECKING:  # heavy modules (torch envs, ray) load when a run builds its parts
    from neurorun.algorithms import SearchAlgorithm
    from neurorun.envs import Backend

_PROBE_LENGTH = 16  # solution length of the dry-run algorithm that checks algo.* before any env
# More threads (torch's, EnvPool's) than any machine has CPUs; torch takes any count, but a
# huge one crashes the process as it exits, after the run has finished.
MAX_THREADS = 1024


def _count(cfg: DictConfig, key: str, *, minimum: int, optional: bool,
           maximum: int | None = None) -> None:
    value = OmegaConf.select(cfg, key)
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum or (
            maximum is not None and value > maximum):
        wanted = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
        fix = f"{key}=<integer {wanted}>" + (f" or {key}=null" if optional else "")
        raise ConfigError(f"{key}={value!r}: expected an integer {wanted}. Fix: {fix}.")


def _number(cfg: DictConfig, key: str, *, positive: bool) -> None:
    value = OmegaConf.select(cfg, key)
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or (positive and value <= 0):
        kind = "a number > 0" if positive else "a finite number"
        raise ConfigError(f"{key}={value!r}: expected {kind} or null. Fix: {key}=<{kind}>.")


def algo_error(cfg: DictConfig, error: Exception) -> ConfigError:
    """The algorithm's message, with its option names written as config keys (algo.x)."""
    message = str(error)
    for key in sorted(cfg.algo, key=len, reverse=True):
        message = re.sub(rf"(?<![\w.]){re.escape(str(key))}=", f"algo.{key}=", message)
    return ConfigError(f"algo={cfg.algo.name}: {message}")


def algo_options(cfg: DictConfig) -> dict[str, Any]:
    """`algo.*` as keyword options (null passes as None: the YAML states every default)."""
    options = OmegaConf.to_container(cfg.algo, resolve=True)
    for key in ("name", "popsize", "distributed"):  # not options of the algorithm itself
        options.pop(key, None)
    return options


PER_PARAMETER = ("center_init", "stdev_init", "stdev_min", "stdev_max", "stdev_max_change")


def _probe_options(cfg: DictConfig) -> dict[str, Any]:
    """`algo.*` for the probe algorithm, which does not know D yet: a list of numbers for a
    per-parameter option stands in as its first number, and a noise table shorter than the
    probe's length as one of that length (both are checked against D when the algorithm is
    built for the sized problem: the probe's refusal named its own length as the solution's)."""
    options = algo_options(cfg)
    for key in PER_PARAMETER:
        value = options.get(key)
        if isinstance(value, list) and value and all(
                isinstance(v, int | float) and not isinstance(v, bool) for v in value):
            options[key] = value[0]
    size = options.get("noise_table_size")
    if isinstance(size, int) and not isinstance(size, bool) and 0 < size < _PROBE_LENGTH:
        options["noise_table_size"] = _PROBE_LENGTH
    return options


# Mappings whose keys are passed on as they are (to gymnasium.make / envpool.make, the network
# string, ray's .options(), the center optimizer), so the schema leaves them open.
OPEN_MAPPINGS = ("env.env_config", "network.network_args", "parallel.actor_config",
                 "algo.optimizer_config")


@cache
def _packaged_schema() -> DictConfig:
    """The config's schema: every key the packaged configs define (config.yaml and every option
    of the env, problem, network, parallel and logger groups). `algo` is added per algorithm
    (its Options dataclass) by `_check_known_keys`."""
    conf = resources.files("neurorun.conf")

    def keys_of(group: str) -> DictConfig:
        union = OmegaConf.create()
        for option in sorted(conf.joinpath(group).iterdir(), key=lambda f: f.name):
            if option.name.endswith(".yaml"):
                text = option.read_text(encoding="utf-8")
                node = OmegaConf.create(text)
                if ConfigSource._get_header_dict(text).get("package") == "_global_":
                    node = node.get(group, OmegaConf.create())
                union = OmegaConf.merge(union, {k: v for k, v in node.items() if k != "defaults"})
        return union

    primary = OmegaConf.load(conf.joinpath("config.yaml"))
    primary = {k: v for k, v in primary.items() if k not in ("defaults", "hydra")}
    return OmegaConf.merge(primary, {group: keys_of(group) for group in
                                     ("env", "problem", "network", "parallel", "logger")})


def _mapping_replaced(schema: Any, cfg: Any, prefix: str = "") -> str:
    """The first key where the schema has a mapping and the config a list (its path)."""
    for key, node in schema.items():
        given = cfg.get(key) if OmegaConf.is_dict(cfg) else None
        path = f"{prefix}{key}"
        if OmegaConf.is_dict(node) and OmegaConf.is_list(given):
            return path
        if OmegaConf.is_dict(node) and OmegaConf.is_dict(given):
            found = _mapping_replaced(node, given, path + ".")
            if found:
                return found
    return ""


def _check_known_keys(cfg: DictConfig) -> None:
    """Refuse keys the schema does not declare (`+logger.console.plian=true` would be silently
    ignored), by merging the config into the schema in OmegaConf's struct mode."""
    from neurorun.algorithms import ALGORITHMS
    from neurorun.algorithms.options import option_names

    schema = _packaged_schema().copy()
    name = cfg.get("algo", {}).get("name")
    schema.algo = ({key: None for key in ("name", "popsize", "distributed",
                                          *option_names(ALGORITHMS[name].Options))}
                   if name in ALGORITHMS else {})  # an unknown name is refused on its own
    OmegaConf.set_struct(schema, True)
    for path in OPEN_MAPPINGS + (() if name in ALGORITHMS else ("algo",)):
        node = OmegaConf.select(schema, path)
        if node is not None:
            OmegaConf.set_struct(node, False)
    try:
        OmegaConf.merge(schema, cfg)
    except ConfigTypeError as error:  # e.g. a list where the schema has a mapping
        path = str(error.full_key) or _mapping_replaced(schema, cfg)
        value = OmegaConf.select(cfg, path, throw_on_missing=False)
        raise ConfigError(f"{path}={value!r}: expected a mapping of keys to values there. Fix: "
                          f"{path}={{key: value}} (`neurorun --cfg job` shows the config)."
                          ) from None
    except ConfigKeyError as error:
        path = str(error.full_key)
        section, _, key = path.rpartition(".")
        parent = OmegaConf.select(schema, section) if section else schema
        close = difflib.get_close_matches(key, list(parent or ()), n=1)
        hint = f"did you mean {f'{section}.' if section else ''}{close[0]}? " if close else ""
        value = OmegaConf.select(cfg, path, throw_on_missing=False)
        raise ConfigError(f"{path}={value!r}: no such key, so it would be ignored; {hint}"
                          "Fix: check the spelling (`neurorun --cfg job` shows every key)."
                          ) from None


# Keys whose packaged default is null but that otherwise take true/false (null: decide).
NULLABLE_BOOLEANS = ("logger.console.plain",)


def _boolean_keys(schema: Any, prefix: str = "") -> list[str]:
    """Every key of ``schema`` whose packaged default is a bool (nested keys as a.b.c)."""
    keys = []
    for key, node in schema.items():
        if OmegaConf.is_dict(node):
            keys += _boolean_keys(node, f"{prefix}{key}.")
        elif isinstance(node, bool):
            keys.append(f"{prefix}{key}")
    return keys


def _check_booleans(cfg: DictConfig) -> None:
    """A boolean key takes true or false (what YAML 1.2 reads as such): text such as `no` or
    `off` would otherwise be truthy and turn the option on. (algo.* keys: the algorithm's
    options dataclass types them, checked by `options_from_flat`.)"""
    absent = object()  # a config saved before a key existed lacks it: its default applies
    for key in (*_boolean_keys(_packaged_schema()), *NULLABLE_BOOLEANS):
        value = OmegaConf.select(cfg, key, default=absent)
        if value is absent or isinstance(value, bool) or (
                value is None and key in NULLABLE_BOOLEANS):
            continue
        also = " or null" if key in NULLABLE_BOOLEANS else ""
        raise ConfigError(f"{key}={value!r}: expected true or false{also}. Fix: {key}=true "
                          f"or {key}=false.")


# problem.* keys of how a rollout turns rewards into fitness (RolloutOptions.parse)
ROLLOUT_KEYS = ("num_episodes", "decrease_rewards_by", "alive_bonus_schedule",
                "action_noise_stdev")


def _raw_value(cfg: DictConfig, key: str) -> Any:
    """The value of ``key`` (a.b[0].c) as written, its `${...}` unresolved."""
    node: Any = OmegaConf.to_container(cfg, resolve=False)
    for part in re.findall(r"[^.\[\]]+", key):
        try:
            node = node[int(part) if isinstance(node, list) else part]
        except (KeyError, IndexError, ValueError, TypeError):
            return None
    return node


def check_interpolations(cfg: DictConfig) -> None:
    """Every `${...}` of the config resolves and no key is `???`: otherwise OmegaConf raises
    its traceback wherever the key is first read, mid-run or in a logger."""
    try:
        OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    except OmegaConfBaseException as error:
        key = str(error.full_key or "")
        cause = " ".join(str(error).splitlines()[0].split())
        raise ConfigError(f"{key}={_raw_value(cfg, key)!r} cannot be resolved ({cause}). "
                          f"Fix: give {key} a value (or an interpolation that resolves; "
                          "`neurorun --cfg job` shows the config).") from None


def _check_problem(cfg: DictConfig) -> None:
    """problem.* values that would otherwise fail late or deep inside torch."""
    from neurorun.envs.gym_env import check_vectorization
    from neurorun.problems.options import RolloutOptions, parse_initial_bounds

    try:
        check_vectorization(cfg.problem.get("vectorization"))
    except ValueError as error:
        raise ConfigError(f"problem.{error}") from None
    device = cfg.problem.get("device")
    try:
        kind = torch.device(device).type
    except (RuntimeError, TypeError):
        raise ConfigError(f"problem.device={device!r}: not a torch device. Fix: "
                          "problem.device=cpu (or cuda, cuda:1 where a GPU is).") from None
    if kind == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"problem.device={device!r}, but this torch sees no CUDA GPU "
                          f"(torch {torch.__version__}, a CPU-only build or no visible device). "
                          "Fix: problem.device=cpu, or install a CUDA build of torch where a "
                          "GPU is (make install TORCH=torch).")
    if kind == "cuda":
        _check_jax_gpu(cfg, device)
    problem = OmegaConf.to_container(cfg.problem, resolve=True)
    try:
        RolloutOptions.parse(**{key: problem[key] for key in ROLLOUT_KEYS if key in problem})
        parse_initial_bounds(problem.get("initial_bounds"))
    except ValueError as error:
        raise ConfigError(f"problem.{error}") from None
    _check_episode_length(cfg)


def _env_backend(cfg: DictConfig) -> Backend | None:
    """The backend table's row of env.id (None: a malformed id, reported where the env is
    resolved)."""
    from neurorun.envs import backend_of

    try:
        return backend_of(str(cfg.env.id))
    except ValueError:
        return None


@contextlib.contextmanager
def _extra_needed() -> Iterator[None]:
    """A missing extra (MissingExtraError) as a ConfigError: its one line, before anything
    starts."""
    try:
        yield
    except MissingExtraError as error:
        raise ConfigError(str(error)) from None


def _check_env_extra(cfg: DictConfig) -> None:
    """env.id's backend is installed (brax:: needs neurorun[jax], ...)."""
    backend = _env_backend(cfg)
    if backend is not None:
        with _extra_needed():
            backend.require(str(cfg.env.id))


def _check_episode_length(cfg: DictConfig) -> None:
    """problem.episode_length on an env that cannot be cut (a factory's own envs)."""
    backend = _env_backend(cfg)
    if backend is None:
        return
    try:
        backend.check_episode_length(str(cfg.env.id), cfg.problem.get("episode_length"),
                                     key="problem.episode_length")
    except ValueError as error:
        raise ConfigError(str(error)) from None


def _check_num_threads(cfg: DictConfig) -> None:
    """env.num_threads on an env that has no EnvPool threads (the spec env.backend resolves
    to: a bare id may run on EnvPool or gymnasium)."""
    from neurorun.envs import backend_of, resolve_backend

    threads = OmegaConf.select(cfg, "env.num_threads", default=None)
    if threads is None:
        return  # resolving env.backend=auto may import EnvPool: only when it matters
    try:
        spec = resolve_backend(str(cfg.env.id),
                               OmegaConf.select(cfg, "env.backend", default="auto"))
    except (ValueError, ImportError):
        return  # a malformed env id or backend is reported where the env is resolved
    try:
        backend_of(spec).check_num_threads(spec, threads, key="env.num_threads")
    except ValueError as error:
        raise ConfigError(str(error)) from None


def _check_jax_gpu(cfg: DictConfig, device: str) -> None:
    """A jax env (brax, Playground) on a CUDA device needs a jax that runs on the GPU."""
    backend = _env_backend(cfg)
    if backend is None or backend.jax_batch is None:
        return
    import jax  # installed: _check_env_extra ran first

    if jax.default_backend() == "cpu":
        raise ConfigError(f"problem.device={device!r} with env {cfg.env.id!r}, but this jax "
                          f"({jax.__version__}) has no GPU backend: {backend} would step on the "
                          "CPU and copy every step to the GPU. Fix: install a CUDA jax (pip "
                          "install 'jax[cuda12]'), or problem.device=cpu.")


def distributed_mode(cfg: DictConfig, algorithm: SearchAlgorithm) -> bool:
    """Whether this run uses distributed mode: ``algo.distributed`` true or false, or ``auto``
    (the default): on ray when the algorithm distributes (all but full CMA-ES), since its
    update equals the local one and it was never slower (docs/ray.md).

    Raises:
        ConfigError: ``true`` where it cannot run (no ray, full CMA-ES), or another value.
    """
    value = cfg.algo.get("distributed", "auto")
    on_ray = cfg.parallel.get("name") == "ray"
    if value == "auto":
        return on_ray and algorithm.distributable
    if not isinstance(value, bool):
        raise ConfigError(f"algo.distributed={value!r}: expected true, false or auto. Fix: "
                          "algo.distributed=auto (distributed on ray where the algorithm can).")
    if value and not on_ray:
        raise ConfigError("algo.distributed=true: actors sample and return weighted sums, so "
                          "it needs ray. Fix: add parallel=ray (or algo.distributed=false).")
    if value:
        from neurorun.parallel import require_distributable  # ray stays unloaded

        try:
            require_distributable(algorithm)
        except ValueError as error:
            raise ConfigError(str(error)) from error
    return value


def _check_parallel(cfg: DictConfig) -> None:
    """parallel=ray's counts, before ray starts (it takes seconds)."""
    if cfg.parallel.get("name") != "ray":
        return
    from neurorun.parallel.workload import (  # ray stays unloaded
        check_max_actor_restarts,
        check_workload,
    )

    try:
        check_workload(cfg.parallel.get("num_actors"), cfg.parallel.get("num_subbatches"),
                       cfg.parallel.get("subbatch_size"))
        check_max_actor_restarts(cfg.parallel.get("max_actor_restarts"))
    except ValueError as error:
        raise ConfigError(f"parallel.{error}") from None
    _check_local_actors(cfg)


def _free_memory() -> int:
    from neurorun.common.memory import device_free_bytes

    return device_free_bytes(torch.device("cpu"))


def _check_local_actors(cfg: DictConfig) -> None:
    """A local ray's actor count (a number, or one per parallel.num_cpus) that this machine's
    memory cannot hold, refused before ray starts."""
    from neurorun.common.memory import MEMORY_SHARE
    from neurorun.parallel.workload import check_local_actors

    if cfg.parallel.get("address"):  # a joined cluster: its nodes hold the actors
        return
    actors, cpus = cfg.parallel.get("num_actors"), cfg.parallel.get("num_cpus")
    count, given = actors, ""
    if actors in ("max", "num_cpus"):
        count, given = cpus, f"parallel.num_cpus={cpus} (num_actors={actors}: one per CPU)"
    if isinstance(count, int) and not isinstance(count, bool):
        try:
            check_local_actors(count, free_bytes=_free_memory(), memory_share=MEMORY_SHARE,
                               given=given)
        except ValueError as error:
            raise ConfigError(str(error)) from None


MAX_POPSIZE_FACTOR = 100  # restart.popsize_factor; pycma's incpopsize is 2


def _check_restart(cfg: DictConfig) -> None:
    """restart.*: counts and a budget that leaves room for a restart."""
    _count(cfg, "restart.patience", minimum=1, optional=True)
    restart = restart_settings(OmegaConf.select(cfg, "restart"))
    share = restart["min_improvement"]
    if isinstance(share, bool) or not isinstance(share, int | float) or not share >= 0:
        raise ConfigError(f"restart.min_improvement={share!r}: expected a number >= 0 (a share "
                          "of the best center_eval). Fix: restart.min_improvement="
                          f"{RESTART_DEFAULTS['min_improvement']}.")
    strategy = restart["strategy"]
    try:
        check_strategy(strategy)
    except ValueError as error:
        raise ConfigError(f"restart.{error}") from None
    factor = restart["popsize_factor"]
    if isinstance(factor, bool) or not isinstance(factor, int | float) or not (
            1 <= factor <= MAX_POPSIZE_FACTOR):
        raise ConfigError(f"restart.popsize_factor={factor!r}: expected a number from 1 to "
                          f"{MAX_POPSIZE_FACTOR} (the popsize's growth per restart, pycma's "
                          f"incpopsize). Fix: restart.popsize_factor="
                          f"{RESTART_DEFAULTS['popsize_factor']:g}.")
    patience = restart["patience"]
    if patience is None:
        if strategy != "same":
            raise ConfigError(f"restart.strategy={strategy} grows the popsize at each restart, "
                              "but restart.patience=null never restarts. Fix: "
                              "restart.patience=5 (or restart.strategy=same).")
        return
    if cfg.eval_every == 0:
        raise ConfigError(f"restart.patience={patience} counts center evaluations, but "
                          "eval_every=0. Fix: eval_every=1 (or restart.patience=null).")
    first = (patience + 1) * int(cfg.eval_every)
    if cfg.generations is not None and first >= cfg.generations:
        raise ConfigError(f"restart.patience={patience} with eval_every={cfg.eval_every}: the "
                          f"first restart could come after generation {first}, but "
                          f"generations={cfg.generations}. Fix: more generations, a smaller "
                          "restart.patience, or restart.patience=null.")


def _check_videos(cfg: DictConfig) -> None:
    """logger.video_every and logger.video_format (a saved config may lack them: no videos)."""
    from neurorun.loggers.videos import check_video_settings

    _count(cfg, "logger.video_every", minimum=0, optional=True)
    try:
        check_video_settings(OmegaConf.to_container(cfg.logger, resolve=True))
    except ValueError as error:
        raise ConfigError(str(error)) from None


def _check_tracker_timeouts(cfg: DictConfig) -> None:
    """logger.<tracker>.timeout_s of each section that sets one, before a run folder is made
    (the tracker checks it again as it starts)."""
    from neurorun.loggers.bounded import timeout_of

    for name, section in OmegaConf.to_container(cfg.logger, resolve=True).items():
        if isinstance(section, dict) and "timeout_s" in section:
            try:
                timeout_of(name, section)
            except ValueError as error:
                raise ConfigError(str(error)) from None


def validate_config(cfg: DictConfig) -> None:
    """Check the config without building any environment.

    Raises:
        ConfigError: naming the key, the value and the fix.
    """
    from neurorun.algorithms import ALGORITHMS, make_algorithm

    check_interpolations(cfg)
    _check_known_keys(cfg)
    _check_booleans(cfg)
    _check_env_extra(cfg)
    _check_problem(cfg)
    _count(cfg, "seed", minimum=0, optional=False, maximum=2**63 - 1)
    for key in ("generations", "max_interactions"):
        _count(cfg, key, minimum=1, optional=True)
    _count(cfg, "eval_every", minimum=0, optional=False)
    _count(cfg, "eval_episodes", minimum=1, optional=False)
    _count(cfg, "checkpoint_every", minimum=0, optional=False)
    _check_videos(cfg)
    _check_tracker_timeouts(cfg)
    _count(cfg, "torch_threads", minimum=1, optional=True, maximum=MAX_THREADS)
    _count(cfg, "env.num_threads", minimum=1, optional=True, maximum=MAX_THREADS)
    _check_num_threads(cfg)
    _number(cfg, "max_time", positive=True)
    _number(cfg, "target_score", positive=False)
    _check_parallel(cfg)
    if all(cfg.get(k) is None for k in ("generations", "max_interactions", "max_time")):
        raise ConfigError("generations, max_interactions and max_time are all null: the run "
                          "would never stop. Fix: set one, e.g. generations=100.")
    _check_restart(cfg)
    if cfg.target_score is not None and cfg.eval_every == 0:
        raise ConfigError(f"target_score={cfg.target_score} needs center evaluations, but "
                          "eval_every=0. Fix: eval_every=1 (or target_score=null).")
    message = objective_error(cfg.objective, cfg.target_score)
    if message:
        raise ConfigError(message)
    name = cfg.algo.get("name")
    if name not in ALGORITHMS:
        raise ConfigError(f"algo.name={name!r}: expected one of {sorted(ALGORITHMS)}. "
                          f"Fix: algo=<one of them>.")
    _count(cfg, "algo.popsize", minimum=1, optional=True)
    try:  # the algorithm checks its own options; a small probe length keeps this instant
        probe = make_algorithm(name, solution_length=_PROBE_LENGTH, popsize=cfg.algo.popsize,
                               seed=0, **_probe_options(cfg))
    except (ValueError, TypeError) as error:
        raise algo_error(cfg, error) from error
    distributed_mode(cfg, probe)
    if cfg.algo.get("noise_source") == "seeds" and cfg.algo.get("noise_table_size") is not None:
        logging.getLogger("neurorun").warning(
            "algo.noise_table_size=%s is ignored: algo.noise_source=seeds draws each sample "
            "from a seed of its own, with no table. Fix: algo.noise_source=table to use a "
            "table, or algo.noise_table_size=null", cfg.algo.noise_table_size)
    if cfg.parallel.get("name") == "ray":  # last: the checks above need no ray
        with _extra_needed():
            require("ray", "parallel=ray")
