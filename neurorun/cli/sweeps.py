"""Checks of an Optuna search's settings before its first trial (a Hydra callback), and the
record of a sweep's failed jobs (`FailedJobs`).

Hydra's Optuna sweeper reads its search space and trial counts only when the search starts,
and a trial whose overrides do not compose ends the whole search: a reversed interval, zero
trials or a search over another algorithm's keys came as a traceback, at once or after a
trial. `SearchCheck` (hydra.callbacks in conf/config.yaml) runs what the sweeper would, once,
before it starts: each search space is built, and the config is composed with one value of
each searched key (and with each choice of a searched config group, e.g. algo=choice(pgpe,cem)).
A problem is one line and exit status 2, as any config error (an interval with an infinite or
NaN end too: Optuna takes it, and its sampler fails at the first trial with an OverflowError).
Any sweep over no value (`seed=range(0,0)`) is refused too: Hydra would run no job, exit 0 and
leave a folder holding only multirun.yaml; so is an interval on Hydra's basic sweeper (its
traceback).
"""

from __future__ import annotations

import math
import re
import sys
from typing import Any

from hydra.errors import HydraException
from hydra.experimental.callback import Callback
from omegaconf import DictConfig
from omegaconf.errors import OmegaConfBaseException

from neurorun.cli.optuna_study import check_study, record_seed
from neurorun.common.errors import CONFIG_ERROR_EXIT, ConfigError, one_line
from neurorun.common.values import is_int, is_number
from neurorun.config.checks import evaluates_center, no_center, validate_config

SPACES = "interval(low, high) with low <= high, choice(a, b, ...) or range(start, stop, step)"


class FailedJobs:
    """The failed jobs of a sweep ("job N (overrides): cause"): each said in one line as it
    fails, all of them again when the sweep ends (``report``), exit status 2."""

    def __init__(self) -> None:
        self.causes: list[str] = []
        self.sweeper: DictConfig | None = None  # an Optuna search's, once a trial failed

    def add(self, hydra_cfg: DictConfig, overrides: list[str], cause: str) -> None:
        """Say it and keep it (``overrides``: the job's, as given). An Optuna search ends here
        with the report when it was the last trial and no trial completed (the sweeper would
        end in a traceback asking for its best trial), or when more than
        ``max_failure_rate`` of its ``n_trials`` failed."""
        job = f"job {hydra_cfg.job.num} ({' '.join(overrides)})"
        print(f"neurorun: {job} failed: {cause}", file=sys.stderr)
        self.causes.append(f"{job}: {cause}")
        trials = hydra_cfg.sweeper.get("n_trials")
        if trials is None:  # not an Optuna search
            return
        self.sweeper = hydra_cfg.sweeper
        if len(self.causes) == hydra_cfg.job.num + 1 == int(trials):
            self.report(" (no trial completed: the search has no best)")
        # the sweeper's own rule cannot see these failures (a failed trial returns no value
        # here, rather than raising), and it counts per batch of n_jobs: the share is of all
        rate = hydra_cfg.sweeper.get("max_failure_rate")
        if rate is not None and len(self.causes) > rate * int(trials):
            self.report(f" (more than hydra.sweeper.max_failure_rate={rate} of "
                        f"n_trials={trials}: the search stops)")

    def report(self, why: str = "") -> None:
        """Exit 2, listing the failed jobs (none failed: return)."""
        if not self.causes:
            return
        if self.sweeper is not None:  # its end comes here, not to on_multirun_end
            record_seed(self.sweeper)
        print(f"neurorun: {len(self.causes)} job(s) of the sweep failed{why}:\n  "
              + "\n  ".join(self.causes), file=sys.stderr)
        sys.exit(CONFIG_ERROR_EXIT)


def _refuse(message: str) -> None:
    print(f"neurorun: config error: {message}", file=sys.stderr)
    sys.exit(CONFIG_ERROR_EXIT)


def _check_counts(sweeper: DictConfig) -> None:
    for key, low in (("n_trials", 1), ("n_jobs", 1)):
        value = sweeper.get(key)
        if not is_int(value) or value < low:
            _refuse(f"hydra.sweeper.{key}={value!r}; expected an integer >= {low}. "
                    f"Fix: e.g. hydra.sweeper.{key}={20 if key == 'n_trials' else 1}.")
    rate = sweeper.get("max_failure_rate")
    if not is_number(rate) or not 0 <= rate <= 1:
        _refuse(f"hydra.sweeper.max_failure_rate={rate!r}; expected a share of the trials "
                "from 0 to 1. Fix: e.g. hydra.sweeper.max_failure_rate=0.25.")


def _spaces(arguments: list[str]) -> dict[str, Any]:
    """Each searched or fixed key's Optuna distribution, or its one value, as the sweeper reads
    ``arguments``. Refuses a search space Optuna does not take."""
    from hydra_plugins.hydra_optuna_sweeper._impl import (
        create_optuna_distribution_from_override,
    )

    spaces = {}
    for override in _parsed(arguments):
        try:
            space = create_optuna_distribution_from_override(override)
        except Exception as error:  # Optuna's ValueError, the plugin's AssertionError
            _refuse(f"the search space {override.input_line} is not one Optuna takes "
                    f"({one_line(error, limit=None).rstrip('.')}). Fix: {SPACES}.")
        if not all(math.isfinite(getattr(space, end, 0)) for end in ("low", "high")):
            # Optuna takes them and its sampler fails at the first trial (an OverflowError)
            _refuse(f"the search space {override.input_line} has a bound that is not a finite "
                    f"number. Fix: {SPACES}, low and high finite.")
        spaces[override.get_key_element()] = space
    return spaces


def _trial_values(spaces: dict[str, Any]) -> list[list[str]]:
    """Each key's values to compose with: one, or every choice of a config group (a key
    without a dot), or a numeric range's ends."""
    from optuna.distributions import CategoricalDistribution

    values = []
    for key, space in spaces.items():
        if isinstance(space, CategoricalDistribution):
            choices = space.choices
        else:  # a fixed value, or a numeric range: its ends stand for all
            choices = list(dict.fromkeys([getattr(space, "low", space),
                                          getattr(space, "high", space)]))
        values.append([f"{key}={choice}" for choice in choices])
    return values


def _compose(overrides: list[str], algo: str, config_name: str) -> None:
    """Compose the config as the sweeper's launcher would for a trial with these overrides."""
    from hydra import compose
    from hydra.errors import ConfigCompositionException

    try:
        cfg = compose(config_name, overrides=overrides)
    except ConfigCompositionException as error:
        first = one_line(error, first_line=True)  # "Could not override 'algo.<key>'."
        found = re.search(r"override '([^']+)'", first)
        key = found.group(1) if found else None
        if key is None:
            _refuse(f"a trial of this search would not compose ({first}). Fix: the search's "
                    "keys and values.")
        if key.startswith("algo."):
            _refuse(f"the search sets {key}, which algo={algo} does not have: every trial "
                    f"with algo={algo} would fail. Fix: search keys of algo={algo} (`neurorun "
                    f"algo={algo} --cfg job -p algo` lists them), or the algorithm the search "
                    "was written for.")
        _refuse(f"the search sets {key}, which the config does not have: every trial would "
                f"fail. Fix: correct the name, or add the key with +{key}=<value>.")
    try:
        checked = validate_config(cfg, machine=False)
    except (ConfigError, OmegaConfBaseException, HydraException) as error:
        _refuse(f"a trial of this search ({' '.join(overrides)}) would be refused: "
                f"{one_line(error, first_line=True)}")
    if not evaluates_center(checked):  # every objective is read from center evaluations
        _refuse(f"objective={checked.objective} is read from center evaluations, but a trial "
                f"of this search ({' '.join(overrides)}) makes none ({no_center(checked)}), so "
                "it would fail. Fix: eval_every=1.")


def _parsed(overrides: list[str]) -> list[Any]:
    """``overrides`` parsed as Hydra's sweeper parses them: with the config loader, which
    lists a group's options for a glob sweep (`algo=glob(*)`; without it, the checks below
    failed and the sweep went unchecked)."""
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser

    hydra = GlobalHydra.instance()
    loader = hydra.config_loader() if hydra.is_initialized() else None  # None: no glob
    return OverridesParser.create(config_loader=loader).parse_overrides(overrides)


def _check_listed(overrides: list[str], basic: bool) -> None:
    """No sweep over no value (no job would run), and on Hydra's ``basic`` sweeper no interval
    (a search space of Optuna's and others': its traceback), before Hydra writes a folder."""
    for override in _parsed(overrides):
        if basic and override.is_interval_sweep():
            _refuse(f"{override.input_line}: an interval is a search space of Optuna's "
                    "sweeper, which this sweep does not use. Fix: add "
                    "hydra/sweeper=optuna (or an hparams_search= preset; docs/sweeps.md), or "
                    "sweep listed values (a,b,c or range(...)).")
        listed = override.is_choice_sweep() or override.is_range_sweep()
        if listed and not list(override.sweep_string_iterator()):
            _refuse(f"{override.input_line} sweeps over no value, so the sweep would run no "
                    "job. Fix: give it at least one value (e.g. seed=range(0,3)).")


def _check_jobs(overrides: list[str], config_name: str) -> None:
    """Every job of a sweep of Hydra's basic sweeper composes and passes the config's checks,
    before the first runs: a bad value refuses the sweep, not its jobs after the good ones."""
    from hydra import compose
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    jobs = [job for batch in BasicSweeper.split_arguments(_parsed(overrides), None)
            for job in batch]
    for number, job in enumerate(jobs):
        try:
            validate_config(compose(config_name, overrides=job), machine=False)
        except (ConfigError, OmegaConfBaseException, HydraException) as error:
            _refuse(f"job {number} of the sweep ({' '.join(job)}) is refused, so no job "
                    f"ran: {one_line(error, first_line=True)}")


class SearchCheck(Callback):
    """Refuses an Optuna search's bad settings before its first trial (and warns where it
    minimizes), and any sweep over no value or with a job whose config is refused; records
    the seed a stored study's trials were drawn with."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        sweeper = config.hydra.sweeper
        if "optuna" not in str(sweeper.get("_target_", "")).lower():
            basic = "basic" in str(sweeper.get("_target_", "")).lower()
            _check_listed(list(config.hydra.overrides.task), basic)
            if basic:
                _check_jobs(list(config.hydra.overrides.task), config.hydra.job.config_name)
            return
        _check_counts(sweeper)
        params = [f"{k!s}={v}" for k, v in (sweeper.get("params") or {}).items()]
        spaces = _spaces([*params, *config.hydra.overrides.task])
        try:
            check_study(sweeper, spaces)
        except ConfigError as error:
            _refuse(str(error))
        if "min" in str(sweeper.get("direction")).lower():  # the objective is higher-is-better
            print("neurorun: warning: the sweeper minimizes the objective, which is higher-is-"
                  "better. Fix: hydra.sweeper.direction=maximize (hparams_search presets set "
                  "it).", file=sys.stderr)
        keyed = _trial_values(spaces)
        fixed = [values[0] for values in keyed]
        # one composition, and one more for each other choice of a searched config group
        trials = [fixed] + [[*fixed[:i], value, *fixed[i + 1:]]
                            for i, values in enumerate(keyed) for value in values[1:]]
        for overrides in trials:
            _compose(overrides, _chosen_algo(overrides, config), config.hydra.job.config_name)
        record_seed(sweeper)  # checked whole: a stored study's trials come from this seed now

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweeper = config.hydra.sweeper
        if "optuna" in str(sweeper.get("_target_", "")).lower():
            record_seed(sweeper)  # a study made by this search exists now


def _chosen_algo(overrides: list[str], config: DictConfig) -> str:
    for override in overrides:
        key, _, value = override.partition("=")
        if key.lstrip("+~") == "algo":
            return value
    return str(config.hydra.runtime.choices.get("algo"))
