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

import contextlib
import logging
import math
import os
import sys
import sysconfig
import traceback
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
from neurorun.cli.hints import preset_hint
from neurorun.cli.resume_record import ResumeRecord
from neurorun.cli.sweeps import FailedJobs
from neurorun.common.atomic import is_disk_full
from neurorun.common.errors import CONFIG_ERROR_EXIT, ConfigError, FolderInUseError, one_line
from neurorun.config.checks import read_key
from neurorun.config.resume import load_run_config
from neurorun.config.schema import RunConfig
from neurorun.loop.runner import Runner
from neurorun.loop.signals import (
    exit_now,
    exit_status,
    held,
    hold,
    interrupts_on_signals,
    release,
)
from neurorun.record import claims
from neurorun.record.layout import HYDRA_DIR
from neurorun.record.run_folder import discard_unstarted, unlock_unstarted

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
    except (FileNotFoundError, ValueError) as error:
        raise ConfigError(str(error)) from error


def _where(error: BaseException) -> str:
    """``, in <function> (<file>:<line>)``: the innermost frame of the error (or of the errors
    that caused it) in the user's own code, not in neurorun, Python or an installed package."""
    library = [str(Path(__file__).parents[1]), *{sysconfig.get_path(name) for name in
                                             ("stdlib", "platstdlib", "purelib", "platlib")}]
    frames, seen = [], set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        frames = traceback.extract_tb(error.__traceback__) + frames
        error = error.__cause__ or error.__context__
    library = [os.path.join(p, "") for p in library if p]  # whole folders: not neurorun_ext/
    own = [f for f in frames if not f.filename.startswith("<")  # generated code, frozen modules
           and not any(f.filename.startswith(p) for p in library)]
    return f", in {own[-1].name} ({own[-1].filename}:{own[-1].lineno})" if own else ""


def _job(cfg: DictConfig, failed_jobs: FailedJobs, kept_back: list[str]) -> float | None:
    """One run; returns its objective (None: the job failed, kept in ``failed_jobs``, or has
    no objective, which Optuna's sweeper records as a failed trial). ``kept_back``: the resume's
    overrides held back from Hydra (``arguments.held_for_resume``)."""
    hydra_cfg = HydraConfig.get()
    sweep = hydra_cfg.mode == RunMode.MULTIRUN
    run_dir = Path(hydra_cfg.runtime.output_dir)
    try:
        release()  # a signal during Hydra's set-up of a single run is raised here
        config, result = _train(cfg, hydra_cfg, run_dir, sweep, kept_back)
    except (Exception, KeyboardInterrupt) as error:
        try:
            cause = _failed(error, cfg, run_dir, exits=not sweep)
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
        # waits for the end of it: inside Hydra's compose one became a composition error,
        # or was lost and the run went on (`_main` turned signals into interrupts)
        with held():
            hooks = preset_hint(read_key(cfg, "env.id"), lambda name: compose(
                "config", overrides=[f"experiment={name}"]))
    if resume:
        overrides = [*task_overrides(hydra_cfg), *kept_back]
        cfg = _resumed_config(resume, overrides)
        hooks = ResumeRecord(overrides)
    runner = Runner(cfg, run_dir=run_dir, callbacks=hooks)
    return runner.config, runner.run()


def _discard_unstarted(run_dir: Path) -> None:
    """Remove the run's folder where its run never began (Hydra's files by this job's names)."""
    hydra_cfg = HydraConfig.get()
    # not resolved again: neurorun's resolver (a sweep's job folder is locked in it) gives the
    # default; a value the command line set is plain
    subdir = (HYDRA_DIR if OmegaConf.is_interpolation(hydra_cfg, "output_subdir")
              else hydra_cfg.output_subdir)
    discard_unstarted(run_dir, hydra_cfg.job.name, subdir)


def _failed(error: BaseException, cfg: DictConfig, run_dir: Path, exits: bool) -> str:
    """Say why the run failed in one line (the traceback goes to the run's neurorun.log) and
    remove a run folder that never started; exit (with 2 for a config error), or, in a sweep
    (``exits`` False), return the cause. Ctrl-C or a signal always exits (the resume hint is
    printed)."""
    # a resume's folder is the user's: never removed (a `${...}` that failed is no resume)
    resuming = OmegaConf.select(cfg, "resume", throw_on_resolution_failure=False)
    if isinstance(error, KeyboardInterrupt):
        if not resuming:
            _discard_unstarted(run_dir)  # stopped before generation 1 (e.g. while ray starts)
        _interrupted(error)
    if isinstance(error, ConfigError):
        if not resuming and not isinstance(error, FolderInUseError):  # not another's files
            _discard_unstarted(run_dir)
        if exits:
            print(f"neurorun: config error: {error}", file=sys.stderr)
            sys.exit(CONFIG_ERROR_EXIT)
        return f"config error: {error}"
    if is_disk_full(error):
        print(f"neurorun: no space left on the device of {error.filename or run_dir} "
              f"({error.strerror}). Fix: free some space, then continue with the resume "
              "command above.", file=sys.stderr)
        if exits:
            sys.exit(1)
    logging.getLogger(__name__).exception("the run failed")
    if not resuming:
        _discard_unstarted(run_dir)  # a run that never started: no folder (nor log)
    log_file = _log_file()  # gone with its folder where the run removed it (Runner)
    cause = f"{one_line(error, with_type=True)}{_where(error)}" + (
        f" (traceback: {log_file})" if log_file is not None and log_file.is_file() else "")
    if exits:
        print(f"neurorun: the run failed: {cause}", file=sys.stderr)
        sys.exit(1)
    return cause


def _log_file() -> Path | None:
    """The file Hydra's job logging writes the run's log to (``<hydra.job.name>.log`` in the
    run folder, unless its config names another), or None."""
    handlers = logging.getLogger().handlers
    files = [Path(h.baseFilename) for h in handlers if isinstance(h, logging.FileHandler)]
    return files[0] if files else None


def _best_score(result: Mapping[str, Any], config: RunConfig) -> str:
    """`center_eval <score>` of the best policy, or why the run has none."""
    score = result.get("best_center_eval")
    if score is not None:
        return f"center_eval {score:.2f}"
    bad = int(result.get("nonfinite_center_evals") or 0)
    why = (f"all {bad} center evaluation(s) met a NaN or infinite reward or observation" if bad
           else f"no center evaluation ran (eval_every="
                f"{config.eval_every}, "
                f"{result.get('generation') or 0} generation(s))")
    return f"no best score: {why}; it holds the last center"


def _interrupted(error: KeyboardInterrupt) -> None:
    """One line and 128 + the signal number, however early the signal came. Where jax ran, the
    process ends at once (XLA's compiler cannot be stopped): the run's state and files are
    written and closed by then."""
    with contextlib.suppress(OSError):  # a terminal that hung up (SIGHUP): the status says why
        print(f"neurorun: {str(error) or 'interrupted (Ctrl-C)'}", file=sys.stderr)
    if "jax" in sys.modules:  # its threads may still run in C++ (`exit_now`)
        claims.remove_unused()
        logging.shutdown()
        exit_now(exit_status(error))
    sys.exit(exit_status(error))


def main() -> None:
    """Console-script entry point (Ctrl-C before the run starts, while Hydra composes the
    config, ends the same way as later: one line, exit status 130; while this module's imports
    load, neurorun.cli.startup does the same)."""
    try:
        _main()
    except KeyboardInterrupt as error:
        _interrupted(error)


def _main() -> None:
    sys.argv[1:] = arguments.rewritten(sys.argv[1:])
    # Hydra's Optuna sweeper (1.3) builds Optuna's sampler and distributions with arguments
    # Optuna deprecates: six FutureWarnings per search that no user can act on
    warnings.filterwarnings("ignore", category=FutureWarning,
                            module=r"(optuna\.samplers\.|hydra_plugins\.hydra_optuna_sweeper)")
    message = folder_claim.folder_error(sys.argv[1:])
    if message:
        print(f"neurorun: config error: {message}", file=sys.stderr)
        sys.exit(CONFIG_ERROR_EXIT)
    named = arguments.folder_interpolations(sys.argv[1:])
    sys.argv[1:], kept_back = arguments.held_for_resume(sys.argv[1:])
    full_error = os.environ.get("HYDRA_FULL_ERROR")  # the user's: Hydra's full report
    os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra raises its errors, to be said here in one line
    failed_jobs = FailedJobs()  # a sweep's, reported when it ends

    @hydra.main(version_base="1.3", config_path="pkg://neurorun.conf", config_name="config")
    def app(cfg: DictConfig) -> float | None:
        """One job; returns its objective, for sweepers."""
        return _job(cfg, failed_jobs, kept_back)

    # one run: signals wait from here until its job starts (`_job` releases them), so Hydra's
    # set-up (run folder, logging, saved configs) runs whole. Not in a sweep, whose jobs may
    # run in other processes (submitit), never releasing them here
    try:
        with interrupts_on_signals():
            if not arguments.asks_for_sweep(sys.argv[1:]):
                hold()
            try:
                app()
            finally:
                release()
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
