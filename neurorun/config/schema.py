"""The run's config, declared: one dataclass per section, the range of each key beside it
(`neurorun.common.settings.setting`), built and checked once at the run's entry
(`neurorun.config.checks.validate_config`) and handed to the parts, each its own section.

The YAML files under neurorun/conf/ hold the values and say what each key means; this module
holds what each key may be. A key here that no packaged YAML sets takes its default; a key a
YAML sets that is not declared here is refused. Two sections are declared by the parts
themselves, so that a new algorithm or logger is one file and one row: ``algo`` (the name, the
popsize and ``distributed`` here; the options are the algorithm's ``Options`` dataclass) and
``logger`` (one section per row of ``neurorun.loggers.LOGGERS``, each logger's ``Settings``).
"""

from __future__ import annotations

import dataclasses
import re
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import torch

from neurorun.algorithms import ALGORITHMS
from neurorun.algorithms.options import option_names
from neurorun.common.errors import ConfigError
from neurorun.common.settings import load_section, setting, unknown_key
from neurorun.envs.gym_env import check_vectorization
from neurorun.loggers import LOGGERS
from neurorun.loggers.videos import VideoSettings
from neurorun.parallel.workload import check_workload
from neurorun.problems.devices import check_devices
from neurorun.problems.options import AliveBonus, RolloutOptions, parse_initial_bounds
from neurorun.problems.running_norm import MIN_VARIANCE

# objective=: the number a run hands back to a Hydra sweeper (loop/objective.py says each)
OBJECTIVES = ("best_center_eval", "last_center_eval", "mean_center_eval_last_<K >= 1>",
              "neg_interactions_to_target")
MEAN_LAST = re.compile(r"mean_center_eval_last_([1-9][0-9]*)")

RESTART_STRATEGIES = ("same", "ipop", "bipop")
MAX_POPSIZE_FACTOR = 100  # restart.popsize_factor; pycma's incpopsize is 2
# More threads (torch's, EnvPool's) than any machine has CPUs; torch takes any count, but a
# huge one crashes the process as it exits, after the run has finished.
MAX_THREADS = 1024


def check_objective(name: Any) -> None:
    """``objective=<name>``: one of OBJECTIVES, ``<K>`` a count (ValueError otherwise)."""
    if name not in OBJECTIVES[:2] + OBJECTIVES[3:] and not (
            isinstance(name, str) and MEAN_LAST.fullmatch(name)):
        raise ValueError(f"objective={name!r}: expected one of {', '.join(OBJECTIVES)}. "
                         "Fix: objective=best_center_eval.")


# ----- rules of one key (where a part's own check takes the value alone, it is the rule)

def _torch_device(value: Any) -> None:
    try:
        if not isinstance(value, str):
            raise TypeError(value)
        kind = torch.device(value).type
    except (RuntimeError, TypeError):
        raise ValueError(f"device={value!r}: not a torch device. Fix: device=cpu (or cuda, "
                         "cuda:1 where a GPU is).") from None
    if kind not in ("cpu", "cuda"):  # mps, xpu, meta: torch's own error came mid-run
        raise ValueError(f"device={value!r}: neurorun runs its policies on cpu or cuda, not "
                         f"{kind}. Fix: device=cpu (or cuda, cuda:1 where a GPU is).")


def _true_false_auto(value: Any) -> None:
    if not (isinstance(value, bool) or value == "auto"):
        raise ValueError(f"distributed={value!r}: expected true, false or auto. Fix: "
                         "distributed=auto (distributed on ray where the algorithm can).")


def _num_actors(value: Any) -> None:
    if value is not None:  # parallel=local's: it has no actors
        check_workload(value, None, None)


def _rollout(name: str) -> Callable[[Any], None]:
    """The rule of a rollout option (how rewards become fitness): RolloutOptions' own."""
    def check(value: Any) -> None:
        RolloutOptions.parse(**{name: value})
    return check


@dataclass(frozen=True)
class RestartConfig:
    """``restart.*``: when a stalled search starts again (neurorun/loop/restarts.py)."""

    patience: int | None = setting(None, ge=1)
    min_improvement: float = setting(0.05, ge=0)  # a share of the attempt's best center_eval
    strategy: str = setting("same", choices=RESTART_STRATEGIES)
    popsize_factor: float = setting(2.0, ge=1, le=MAX_POPSIZE_FACTOR)


@dataclass(frozen=True)
class EnvConfig:
    """``env.*``: the task (a backend's spec) and how its envs are made."""

    id: str = "CartPole-v1"
    env_config: dict[str, Any] = field(default_factory=dict)  # the env's own keywords
    target_score: float | None = None
    note: str | None = None
    backend: str = "auto"  # checked with the id, where the env is resolved (envs.backends)
    num_threads: int | None = setting(None, ge=1, le=MAX_THREADS)


@dataclass(frozen=True)
class ProblemConfig:
    """``problem.*``: how episodes become fitness (``neurorun.problems.make_problem``)."""

    observation_normalization: bool = False
    observation_min_variance: float = setting(MIN_VARIANCE, ge=0.0)  # 0: none, as ARS
    num_episodes: int = setting(1, ge=1)
    episode_length: int | None = setting(None, ge=1)
    decrease_rewards_by: float | None = setting(0.0, rule=_rollout("decrease_rewards_by"))
    alive_bonus_schedule: Any = setting(None, rule=AliveBonus.parse)  # [t, b] or [t0, t1, b]
    action_noise_stdev: float | None = setting(None, rule=_rollout("action_noise_stdev"))
    # [[steps, length], ...]: the training episodes' length by the interactions so far
    episode_length_schedule: Any = setting(None, rule=_rollout("episode_length_schedule"))
    max_num_envs: int | None = setting(None, ge=1)
    streaming: bool = True
    initial_bounds: Any = setting(None, rule=parse_initial_bounds)  # [low, high]
    device: str = setting("cpu", rule=_torch_device)
    jit: bool = True
    devices: Any = setting("auto", rule=check_devices)  # auto, a count or a list of ids
    vectorization: str = setting("auto", rule=check_vectorization)


@dataclass(frozen=True)
class NetworkConfig:
    """``network.*``: the policy (a network string or ``pkg.module:Factory``)."""

    spec: str = "Linear(obs_length, act_length)"
    network_args: dict[str, Any] = field(default_factory=dict)  # its constants / keywords


def refused_on_local(given: str) -> str:
    """The line refusing ``given`` (``parallel.<key>=<value>``, a setting of parallel=ray) on a
    parallel=local run: the config checks' and, for a key given without ``+``, Hydra's."""
    return (f"{given} is a setting of parallel=ray, and this run evaluates in its own process "
            "(parallel=local). Fix: parallel=ray to use it, or leave it out.")


@dataclass(frozen=True)
class ParallelConfig:
    """``parallel.*``: where populations are evaluated (local, or ray's actors)."""

    name: str = setting("local", choices=("local", "ray"))
    num_actors: Any = setting(None, rule=_num_actors)  # a count or max, num_cpus, ...
    num_gpus_per_actor: float | None = setting(None, ge=0)
    actor_config: dict[str, Any] = field(default_factory=dict)  # ray's .options()
    num_subbatches: int | None = setting(None, ge=1)
    subbatch_size: int | None = setting(None, ge=1)
    address: str | None = None
    num_cpus: int | None = setting(None, ge=1)
    include_dashboard: bool = False
    max_actor_restarts: int = setting(3, ge=0)

    @property
    def ray_actors(self) -> Any:
        """num_actors on ray (null: one per CPU, ``max``; parallel=local's is null)."""
        return self.num_actors or "max"


# Mappings whose keys are passed on as they are (to gymnasium.make / envpool.make, the network
# string, ray's .options(), the center optimizer): any key may be new there (the command line
# adds it, `cli.arguments.open_mapping_overrides`)
OPEN_MAPPINGS = ("env.env_config", "network.network_args", "parallel.actor_config",
                 "algo.optimizer_config")


def in_open_mapping(key: str) -> bool:
    """Whether ``key`` (dotted) lies under one of OPEN_MAPPINGS."""
    return any(key.startswith(path + ".") for path in OPEN_MAPPINGS)

@dataclass(frozen=True)
class AlgoConfig:
    """``algo.*``: the algorithm's name, popsize, distributed mode and its own options (the
    flat keys its ``Options`` dataclass takes, as the config holds and the constructors take them;
    ``typed_options`` reads them as that dataclass)."""

    name: str = "pgpe"
    popsize: int | None = setting(None, ge=1)
    distributed: Any = setting("auto", rule=_true_false_auto)
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def typed_options(self) -> Any:
        """``options`` as the algorithm's ``Options`` dataclass, its defaults filled in and
        checked (`SearchAlgorithm.checked_options`: a ValueError names the option)."""
        return ALGORITHMS[self.name].checked_options(self.popsize, self.options)


# algo.* that are the run's, not options of the algorithm
ALGO_KEYS = tuple(f.name for f in fields(AlgoConfig) if f.name != "options")


def load_algo(raw: Any, path: str = "algo") -> AlgoConfig:
    """``algo.*`` as an AlgoConfig: a name of ALGORITHMS, and only keys its options take."""
    raw = dict(raw or {})
    name = raw.get("name", AlgoConfig.name)
    if name not in ALGORITHMS:
        raise ConfigError(f"{path}.name={name!r}: expected one of {sorted(ALGORITHMS)}. "
                          f"Fix: algo=<one of them>.")
    known = (*ALGO_KEYS, *option_names(ALGORITHMS[name].Options))
    for key, value in raw.items():
        if key not in known:
            raise unknown_key(f"{path}.{key}", value, known)
    given = {key: raw[key] for key in ALGO_KEYS if key in raw}
    return load_section(AlgoConfig, {**given, "options": {
        k: v for k, v in raw.items() if k not in ALGO_KEYS}}, path)


def logger_section() -> type:
    """``logger.*``'s dataclass: the videos' keys and one section per row of LOGGERS that
    declares ``Settings`` (made per call: a test may add a row)."""
    rows = [(name, kind.Settings, field(default_factory=kind.Settings))
            for name, kind in LOGGERS.items() if kind.Settings is not None]
    return dataclasses.make_dataclass("LoggerConfig", rows, bases=(VideoSettings,), frozen=True)


@dataclass(frozen=True)
class RunConfig:
    """The whole config of a run (conf/config.yaml says what each key means)."""

    seed: int = setting(0, ge=0, le=2**63 - 1)
    generations: int | None = setting(100, ge=1)
    max_interactions: int | None = setting(None, ge=1)
    max_time: float | None = setting(None, gt=0)
    target_score: float | None = None
    eval_every: int = setting(1, ge=0)
    eval_episodes: int = setting(5, ge=1)
    checkpoint_every: int = setting(10, ge=0)
    objective: str = setting("best_center_eval", rule=check_objective)
    restart: RestartConfig = field(default_factory=RestartConfig)
    resume: str | None = None
    trust_code: bool = False
    torch_threads: int | None = setting(1, ge=1, le=MAX_THREADS)
    env: EnvConfig = field(default_factory=EnvConfig)
    problem: ProblemConfig = field(default_factory=ProblemConfig)
    network: NetworkConfig = field(default_factory=NetworkConfig)
    parallel: ParallelConfig = field(default_factory=ParallelConfig)
    algo: AlgoConfig = setting(factory=AlgoConfig, loader=load_algo)
    # `logger_section()`'s dataclass, made at load: the videos' keys and a section per row
    logger: VideoSettings = setting(factory=lambda: logger_section()(),
                                    loader=lambda raw, path: load_section(logger_section(), raw,
                                                                          path))

    def as_record(self) -> dict[str, Any]:
        """Every key as plain values, ``algo``'s options flat beside its own keys, as written in
        a config (what the console shows and trackers record)."""
        record = dataclasses.asdict(self)
        algo = record["algo"]
        record["algo"] = {**{key: algo[key] for key in ALGO_KEYS}, **algo["options"]}
        return record


def declared(key: str) -> tuple[Any, Mapping[str, Any]]:
    """The type and the limits (a `setting`'s metadata) of a dotted key of a section (not of
    ``algo``'s options or ``logger``'s rows, known only at run time)."""
    cls, *path = RunConfig, *key.split(".")
    for part in path[:-1]:
        cls = typing.get_type_hints(cls)[part]
    item = {f.name: f for f in dataclasses.fields(cls)}[path[-1]]
    return typing.get_type_hints(cls)[path[-1]], item.metadata


def load_config(raw: Any) -> RunConfig:
    """The RunConfig of a resolved config (a plain mapping), each key checked alone; the rules
    between keys and the checks of this machine are `neurorun.config.checks`'."""
    return load_section(RunConfig, raw)
