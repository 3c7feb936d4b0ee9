"""The `neurorun` command: a Hydra app that composes the config and hands it to `run`.

    neurorun                                  # PGPE on CartPole-v1 (neurorun/conf/config.yaml)
    neurorun algo=snes env=brax::humanoid     # any gymnasium id or brax name
    neurorun -m algo=pgpe,snes seed=0,1,2     # a sweep, one folder per job
    neurorun resume=runs/CartPole-v1/pgpe/<run> generations=200

Configs ship inside the package (pkg://neurorun.conf), so the command works from any folder.
A config error ends with one message and exit status 2 and leaves no run folder behind. In a
sweep a job that fails (a config error, or an error while it runs: its traceback goes to the
job's neurorun.log) prints one line, the other jobs still run, and the sweep ends with one
report of every failed job and exit status 2. For Optuna a job without an objective (failed,
or NaN: no center evaluation) is a failed trial. Ctrl-C, SIGTERM,
SIGUSR1 and SIGHUP end a run with a checkpoint of its last finished generation, the resume
command and exit status 128 + the signal number (130, 143, 138, 129), without a traceback.
"""

from __future__ import annotations

# isort: off
import neurorun.cli.startup  # first: Ctrl-C while the modules below load: one line, no traceback
# isort: on

import math
import os
import sys
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import hydra
import yaml
from hydra import compose, initialize_config_module
from hydra.core.hydra_config import HydraConfig
from hydra.errors import CompactHydraException, HydraException
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from neurorun.algorithms import ALGORITHMS
from neurorun.cli import arguments, folder_claim, hydra_errors
from neurorun.cli.env_source import register_hydra_extensions
from neurorun.cli.failures import say_failure, say_interrupted
from neurorun.cli.hints import preset_hint
from neurorun.cli.resume_record import ResumeRecord
from neurorun.cli.sweeps import FailedJobs
from neurorun.common.errors import CONFIG_ERROR_EXIT, ConfigError, one_line
from neurorun.common.streams import replace_unencodable
from neurorun.config.checks import read_key
from neurorun.config.resume import load_run_config
from neurorun.config.schema import RunConfig
from neurorun.loop.runner import Runner
from neurorun.loop.signals import (
    defer_signals,
    deferred_signals,
    interrupts_on_signals,
    stop_deferring_signals,
)
from neurorun.record import claims
from neurorun.record.run_folder import unlock_unstarted

neurorun.cli.startup.loaded()  # from here main() catches Ctrl-C

# Hydra needs the env config source and the run-folder resolvers before any compose, including
# compose calls of Python users and tests that import CONFIG_MODULE from here.
register_hydra_extensions()

CONFIG_MODULE = "neurorun.conf"


def compose_config(overrides: Sequence[str] = (), *, hydra_config: bool = False) -> DictConfig:
    """The config the command would run with these overrides, for Python use and tests.

        from neurorun.cli.app import compose_config
        from neurorun.loop.runner import run
        run(compose_config(["algo=snes", "env=brax::ant"]), run_dir="runs/mine")
    """
    with initialize_config_module(CONFIG_MODULE, version_base="1.3"):
        cfg = compose("config", overrides=arguments.open_mapping_overrides(overrides),
                      return_hydra_config=True)
    if not hydra_config:
        with open_dict(cfg):
            del cfg.hydra
    return cfg


def task_overrides(hydra_cfg: DictConfig) -> list[str]:
    """The command line's overrides as given: reading Hydra's list item by item would resolve
    a `${...}` inside them (`'algo.x=${oc.env:NOPE}'` fails there, before any check)."""
    return OmegaConf.to_container(hydra_cfg.overrides.task, resolve=False)


def _resumed_config(run_dir: str, overrides: list[str]) -> DictConfig:
    """A resumed run's saved config with this command line's ``overrides`` applied on top."""
    try:
        return load_run_config(run_dir, overrides)
    except (FileNotFoundError, ValueError, HydraException) as error:
        raise ConfigError(one_line(error, limit=None)) from error


def _job(cfg: DictConfig, failed_jobs: FailedJobs, kept_back: list[str]) -> float | None:
    """One run; returns its objective (None: the job failed, kept in ``failed_jobs``, or has
    no objective, which Optuna's sweeper records as a failed trial). ``kept_back``: the resume's
    overrides held back from Hydra (``arguments.held_for_resume``)."""
    hydra_cfg = HydraConfig.get()
    sweep = hydra_cfg.mode == RunMode.MULTIRUN
    run_dir = Path(hydra_cfg.runtime.output_dir)
    try:
        stop_deferring_signals()  # a signal during Hydra's set-up of a single run is raised here
        config, result = _train(cfg, hydra_cfg, run_dir, sweep, kept_back)
    except (Exception, KeyboardInterrupt) as error:
        try:
            cause = say_failure(error, cfg, run_dir, exits=not sweep)
        finally:
            unlock_unstarted(run_dir)  # where the run never took its folder's lock over
        failed_jobs.add(hydra_cfg, task_overrides(hydra_cfg), cause)  # the sweep goes on
        return None
    print(f"run folder:  {result['run_dir']}")
    print(f"best policy: {result['best_policy']} ({_best_score(result, config)})")
    name = config.objective
    print(f"objective:   {name} = {result['objective']}")
    objective = result["objective"]
    searching = sweep and hydra_cfg.sweeper.get("n_trials") is not None  # Optuna
    if searching and not math.isfinite(objective):
        failed_jobs.add(hydra_cfg, task_overrides(hydra_cfg), f"objective {name} = "
                        f"{objective} (no finite center evaluation: more generations, or "
                        "eval_every=1)")
        return None
    return objective


def _train(cfg: DictConfig, hydra_cfg: DictConfig, run_dir: Path, sweep: bool,
           kept_back: list[str]) -> tuple[RunConfig, dict[str, Any]]:
    """The config that ran, typed (a resumed run's saved one, this command's overrides on
    top), and what its run returned."""
    resume = read_key(cfg, "resume")  # each key read here alone: the Runner reads them all
    picked = [o.partition("=")[0] for o in task_overrides(hydra_cfg)
              if o.lstrip("+~").partition("=")[0] in ("env_algo", "experiment_algo")]
    if picked:
        raise ConfigError(f"{picked[0]}= is not chosen on the command line: the env (or "
                          "experiment) and the algorithm pick it (env_algo/<env>/<algo>.yaml). "
                          "Fix: leave it out; set the algorithm's keys (algo.<key>=...) instead.")
    chosen, name = hydra_cfg.runtime.choices.get("algo"), read_key(cfg, "algo.name")
    if not resume and chosen in ALGORITHMS and name is not None and chosen != name:
        raise ConfigError(f"algo.name={name} renames the algorithm algo={chosen} chose, whose "
                          f"options come with it. Fix: algo={name} (each algorithm's options: "
                          "`neurorun --help`).")
    hooks = None
    if (any(o.startswith("env=") for o in task_overrides(hydra_cfg)) and not sweep
            and not resume
            and hydra_cfg.runtime.choices.get("experiment") in (None, "null")):
        # a bare `neurorun env=Hopper-v5`: said what its tuned preset would be. A Ctrl-C
        # waits for the end of it: inside Hydra's compose it would be taken for a
        # composition error
        with deferred_signals():
            hooks = preset_hint(read_key(cfg, "env.id"), read_key(cfg, "algo"),
                                lambda name: compose("config",
                                                     overrides=[f"experiment={name}"]))
    if resume:
        overrides = [*task_overrides(hydra_cfg), *kept_back]
        cfg = _resumed_config(resume, overrides)
        hooks = ResumeRecord(overrides)
    runner = Runner(cfg, run_dir=run_dir, callbacks=hooks)
    return runner.config, runner.run()


def _show_resumed_config(resume: str, shown: str | None, overrides: list[str],
                         kept_back: list[str]) -> None:
    """``--cfg job`` with ``resume=``: print the config the resume would run (Hydra would print
    the packaged defaults), and end; nothing where --cfg is not given."""
    if shown is None:
        return
    if shown != "job" or any(a.split("=")[0] in ("--package", "-p") for a in sys.argv[1:]):
        print(f"neurorun: config error: --cfg {shown} (or --package) with resume= would show "
              "the packaged defaults, not the run's config. Fix: --cfg job alone",
              file=sys.stderr)
        sys.exit(CONFIG_ERROR_EXIT)
    try:
        config = _resumed_config(resume, [*overrides, *kept_back])
    except ConfigError as error:
        print(f"neurorun: config error: {error}", file=sys.stderr)
        sys.exit(CONFIG_ERROR_EXIT)
    print(OmegaConf.to_yaml(config), end="")
    sys.exit(0)


def _best_score(result: Mapping[str, Any], config: RunConfig) -> str:
    """`center_eval <score>` of the best policy, or why the run has none."""
    score = result.get("best_center_eval")
    if score is not None:
        return f"center_eval {score:.2f}"
    bad = int(result.get("nonfinite_center_evals") or 0)
    why = (f"all {bad} center evaluation(s) met a NaN or infinite reward, observation or "
           "choice score" if bad
           else f"no center evaluation ran (eval_every="
                f"{config.eval_every}, "
                f"{result.get('generation') or 0} generation(s))")
    return f"no best score: {why}; it holds the last center"


def main() -> None:
    """Console-script entry point (Ctrl-C before the run starts, while Hydra composes the
    config, ends the same way as later: one line, exit status 130; while this module's imports
    load, neurorun.cli.startup does the same)."""
    try:
        _main()
    except KeyboardInterrupt as error:
        say_interrupted(error)


def _main() -> None:
    replace_unencodable()
    sys.argv[1:] = arguments.rewritten(sys.argv[1:])
    # Hydra's Optuna sweeper (1.3) builds Optuna's sampler and distributions with arguments
    # Optuna deprecates (and a stored study reads them back): FutureWarnings no user can act on
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"(optuna\.samplers\.|"
                            r"optuna\.distributions|hydra_plugins\.hydra_optuna_sweeper)")
    message = hydra_errors.group_choice_error(sys.argv[1:]) or folder_claim.folder_error(
        sys.argv[1:])
    if message:
        print(f"neurorun: config error: {message}", file=sys.stderr)
        sys.exit(CONFIG_ERROR_EXIT)
    named = arguments.folder_interpolations(sys.argv[1:])
    sys.argv[1:], kept_back = arguments.held_for_resume(sys.argv[1:])
    resume = arguments.given_values(sys.argv[1:]).get("resume")
    if resume:
        _show_resumed_config(resume, *arguments.shown_config(sys.argv[1:]), kept_back)
    full_error = os.environ.get("HYDRA_FULL_ERROR")  # the user's: Hydra's full report
    os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra raises its errors, to be said here in one line
    failed_jobs = FailedJobs()  # a sweep's, reported when it ends

    @hydra.main(version_base="1.3", config_path="pkg://neurorun.conf", config_name="config")
    def app(cfg: DictConfig) -> float | None:
        """One job; returns its objective, for sweepers."""
        return _job(cfg, failed_jobs, kept_back)

    # one run: signals wait from here until its job starts (`_job` stops deferring them), so Hydra's
    # set-up (run folder, logging, saved configs) runs whole. Not in a sweep, whose jobs may
    # run in other processes (submitit), never stopping that here
    try:
        with interrupts_on_signals():
            if not arguments.asks_for_sweep(sys.argv[1:]):
                defer_signals()
            try:
                app()
            finally:
                stop_deferring_signals()
    except yaml.YAMLError as error:  # a user's config file (--config-dir) Hydra could not read
        print(f"neurorun: config error: {hydra_errors.yaml_error_line(error)}", file=sys.stderr)
        sys.exit(CONFIG_ERROR_EXIT)
    except (OmegaConfBaseException, HydraException) as error:
        line = hydra_errors.config_error_line(error, sys.argv[1:])
        if line is None and named:  # Hydra resolves them to name the folder
            line = (f"{', '.join(named)} cannot be resolved ({one_line(error, first_line=True)}"
                    "), and the run folder is "
                    "named after it. Fix: give it a value.")
        if line is None:
            if full_error or not isinstance(error, CompactHydraException):
                raise
            hydra_errors.report_like_hydra(error)
        print(f"neurorun: config error: {line}", file=sys.stderr)
        sys.exit(CONFIG_ERROR_EXIT)
    finally:
        claims.remove_unused()  # the folders made for a run that never started: none stays
        if full_error is None:
            os.environ.pop("HYDRA_FULL_ERROR", None)
    failed_jobs.report()


if __name__ == "__main__":
    main()
