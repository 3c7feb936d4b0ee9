"""The folders a command names, checked before Hydra writes into them (``folder_error``);
then, in Hydra's hook before it writes (``FolderClaim``), the run or sweep folder is claimed,
and a run's is locked (a sweep's job's as Hydra reads ``hydra.output_subdir``:
``job_output_subdir``)."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from neurorun.cli.arguments import asks_for_sweep, given_values, override_key
from neurorun.common.errors import CONFIG_ERROR_EXIT
from neurorun.config.resume import require_saved_config
from neurorun.record.claims import claiming
from neurorun.record.layout import output_subdir, taken_name
from neurorun.record.run_folder import (
    lock_for_run,
    refuse_existing_sweep,
    refuse_lost_state,
    refuse_misplaced,
    refuse_unsafe_entries,
    require_creatable,
)


def folder_error(argv: Sequence[str]) -> str | None:
    """What is wrong with the folders named on the command line, checked before Hydra writes
    its files into them: `resume=` must name an earlier run (and no other folder be named
    with hydra.run.dir=), no folder key be empty (the current folder), `hydra.sweep.dir=` of a
    sweep must not hold a sweep, and the run or sweep folder must be one that can be made, its
    jobs' folders hold no FIFO or device where a run opens a file. (A single run's folder is
    checked under its lock: ``FolderClaim``.)"""
    given = {key: str(value) for key, value in given_values(argv).items() if value is not None}
    try:
        if given.get("resume") == "":
            raise ValueError("resume= names no folder. Fix: resume=<the run folder> to continue "
                             "a run, or leave resume= out to start a new one.")
        for key in ("resume", "hydra.run.dir", "hydra.sweep.dir"):
            _refuse_tilde(key, given.get(key, ""))
        for key in ("hydra.run.dir", "hydra.sweep.dir", "hydra.sweep.subdir"):
            if given.get(key) == "":  # Hydra's files among the user's (or the sweep's)
                where = "the sweep's folder" if key.endswith("subdir") else "the current folder"
                raise ValueError(f"{key}= names no folder: the run's files would go into {where}"
                                 f". Fix: {key}=<a folder>, or leave {key}= out.")
        for key in ("hydra.run.dir", "hydra.sweep.dir"):
            if key in given and "${" not in given[key]:  # interpolated: known once composed
                require_creatable(given[key], key)
                if key == "hydra.run.dir":  # a sweep's jobs write into folders of their own
                    _refuse_current_folder(given[key])
        if asks_for_sweep(argv):
            _refuse_swept_resume(argv)
        if "resume" in given:
            _refuse_other_folder(given["resume"], given.get("hydra.run.dir"))
            refuse_misplaced(given["resume"])  # a FIFO .hydra/config.yaml: said as such
            require_saved_config(given["resume"])
            refuse_lost_state(given["resume"])  # again under the lock: RunFolder
        if "hydra.sweep.dir" in given and asks_for_sweep(argv):
            refuse_existing_sweep(given["hydra.sweep.dir"])
            for job in Path(given["hydra.sweep.dir"]).glob("*/"):  # Hydra logs into each
                refuse_misplaced(job)
    except (FileNotFoundError, ValueError) as error:
        return str(error)
    return None


def _refuse_tilde(key: str, value: str) -> None:
    """ValueError for a folder that starts with ``~``: Hydra reads a ``~`` only quoted, and
    the shell leaves a quoted one as it is, so it would be a folder named ``~`` here."""
    if not value.startswith("~"):
        return
    expanded = os.path.expanduser(value)
    fix = (f"{key}={expanded}" if expanded != value
           else f"{key}=<the folder's full path>")  # ~name of no such user
    raise ValueError(f"{key}={value!r} starts with '~', which the shell does not expand "
                     "inside a quoted override: it would be a folder named "
                     f"{value.partition('/')[0]!r} in the current one. Fix: {fix}")


def _refuse_swept_resume(argv: Sequence[str]) -> None:
    """ValueError for ``resume=`` in a sweep: each job would start again in a new folder of
    the sweep, leaving the runs named there as they were."""
    resumed = [arg for arg in argv if not arg.startswith("-") and override_key(arg) == "resume"
               and arg.partition("=")[2] not in ("", "null")]
    if resumed:
        raise ValueError(f"{resumed[0]} with -m: a sweep's jobs start in new folders of the "
                         "sweep, and a run resumes only in its own. Fix: resume each run with "
                         "a command of its own (for run in A B; do neurorun resume=$run; done)")


def _refuse_current_folder(folder: str) -> None:
    """ValueError when a run's ``folder`` is the current folder or holds it
    (``hydra.run.dir=.``): its files would go among the user's, as with an empty key."""
    path, here = Path(folder).resolve(), Path.cwd().resolve()
    if path == here or path in here.parents:
        where = "the current folder" if path == here else "a folder that holds the current one"
        raise ValueError(f"hydra.run.dir={folder!r} is {where}: the run's files would go "
                         "among yours. Fix: hydra.run.dir=<a new folder>, or leave it out.")


def _refuse_other_folder(resume: str, run_dir: str | None) -> None:
    """ValueError when hydra.run.dir names another folder than the one resumed: the run
    continues in its own folder, and every path said would be wrong."""
    if run_dir is not None and Path(run_dir).resolve() != Path(resume).resolve():
        raise ValueError(f"resume={resume!r} continues that run in its own folder, but "
                         f"hydra.run.dir={run_dir!r} names another. Fix: leave hydra.run.dir= "
                         "out (copy the folder first to continue a copy).")


def check_hydra_names(config: DictConfig) -> None:
    """ValueError when ``hydra.job.name`` (the log's name: <name>.log in the run folder) is
    not a plain file name, or ``hydra.output_subdir`` (Hydra's saved configs) is not a path
    inside the run folder (Hydra would write outside it) or is one neurorun uses there
    (``layout.taken_name``: a folder where a file belongs, or Hydra's files among its own)."""
    name = OmegaConf.select(config, "hydra.job.name")
    if name is not None and (not str(name).strip(".") or "/" in str(name)):
        raise ValueError(f"hydra.job.name={name!r} names the run's log file ({name}.log in "
                         "the run folder): it must be a plain file name. Fix: a name without "
                         "'/', such as hydra.job.name=neurorun.")
    subdir = OmegaConf.select(config, "hydra.output_subdir")
    if subdir is not None and (PurePosixPath(str(subdir)).is_absolute()
                               or ".." in PurePosixPath(str(subdir)).parts):
        raise ValueError(f"hydra.output_subdir={subdir!r} is where Hydra saves the run's "
                         "config: it must lie inside the run folder. Fix: a relative path "
                         "without '..', such as hydra.output_subdir=.hydra.")
    taken = None if subdir is None else taken_name(str(subdir), f"{name}.log")
    if taken is not None:
        raise ValueError(f"hydra.output_subdir={subdir!r} is where Hydra saves the run's "
                         f"config, but {taken} in the run folder is neurorun's. Fix: another "
                         "name, such as hydra.output_subdir=.hydra.")
    _refuse_given_output_subdir(config)


def _refuse_given_output_subdir(config: DictConfig) -> None:
    """ValueError for a ``hydra.output_subdir`` given (not ``job_output_subdir``'s, not null)
    in a sweep or a resume: Hydra would save its files there without that resolver's guard,
    over a resumed run's saved config, or into a sweep's job folder that is refused."""
    given = OmegaConf.to_container(config.hydra, resolve=False).get("output_subdir")
    resume = OmegaConf.select(config, "resume") not in (None, "")
    if given is None or str(given).startswith("${neurorun.output_subdir:"):
        return
    if resume or OmegaConf.select(config, "hydra.mode") == RunMode.MULTIRUN:
        why = ("over the run's own saved config" if resume else
               "before each job's folder is checked (it may hold a run)")
        raise ValueError(f"hydra.output_subdir={given!r} with {'resume=' if resume else '-m'}: "
                         f"Hydra would save its files there {why}. Fix: leave "
                         "hydra.output_subdir= out, or hydra.output_subdir=null (Hydra saves "
                         "none).")


def job_output_subdir(resume: Any, *, _root_: DictConfig) -> str | None:
    """``hydra.output_subdir`` (a resolver): where Hydra saves its files in a run folder
    (``layout.output_subdir``). Hydra reads it just before it writes them, and has no hook there
    for a sweep's job (a single run's folder is locked in ``FolderClaim``): the job's folder is
    locked here. Where it cannot be (in use, or holding a run), Hydra saves nothing there, the
    log Hydra opened there a moment ago is closed, and the job is refused (``RunFolder``) with
    that folder's files unchanged."""
    folder = OmegaConf.select(_root_, "hydra.runtime.output_dir", throw_on_missing=False)
    if folder is not None and OmegaConf.select(_root_, "hydra.mode") == RunMode.MULTIRUN:
        try:
            lock_for_run(folder, resume=resume not in (None, ""))
        except ValueError:
            _close_logs_in(Path(folder))
            return None
    return output_subdir(resume)


def _close_logs_in(folder: Path) -> None:
    """Close and remove the logging handlers that write a file in ``folder``."""
    loggers = [logging.getLogger(), *(logger for logger in logging.Logger.manager.loggerDict
                                      .values() if isinstance(logger, logging.Logger))]
    for logger in loggers:
        for handler in list(logger.handlers):
            if isinstance(handler, logging.FileHandler) and \
                    Path(handler.baseFilename).parent == folder.absolute():
                logger.removeHandler(handler)
                handler.close()


def refuse_unsafe_hydra_files(folder: str | Path, config: DictConfig) -> None:
    """ValueError (one line) where Hydra's log or saved configs in ``folder``, named by the
    config's ``hydra.job.name`` and ``hydra.output_subdir``, are symbolic links (Hydra would
    write through them), or a FIFO, socket, device or the wrong kind of entry (Hydra would
    block opening them, with signals deferred)."""
    refuse_unsafe_entries(folder, OmegaConf.select(config, "hydra.job.name"),
                          OmegaConf.select(config, "hydra.output_subdir"))


class FolderClaim(Callback):
    """Hydra's hook before it writes a run's or sweep's folder: a new one is claimed (made
    now, never shared with a command started in the same second: ``claims``), the Hydra keys
    that name files in it are checked, and a single run's folder is locked and checked under
    the lock, so that nothing is written into a folder before its lock is held."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        folder = _claim(config, "hydra.run.dir")
        if folder is not None:
            resume = OmegaConf.select(config, "resume") not in (None, "")
            _refuse_on_error(lambda: (check_hydra_names(config),
                                      refuse_unsafe_hydra_files(folder, config),
                                      lock_for_run(folder, resume=resume)))

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        folder = _claim(config, "hydra.sweep.dir")
        if folder is not None:
            _refuse_on_error(lambda: (check_hydra_names(config), *(
                refuse_unsafe_hydra_files(job, config) for job in Path(folder).glob("*/"))))


def _claim(config: DictConfig, key: str) -> str | None:
    """The folder ``key`` names, a new one claimed (made) as it is resolved; None when it
    cannot be resolved (Hydra meets the error again, and the command says it in one line)."""
    try:
        with claiming():
            return str(OmegaConf.select(config, key))
    except OmegaConfBaseException as error:
        cause: BaseException | None = error  # OmegaConf chains the resolver's error
        while cause is not None and not isinstance(cause, OSError):
            cause = cause.__cause__ or cause.__context__
        if cause is not None:  # e.g. a file named runs
            _refuse_on_error(lambda: _no_folder(key, cause))
        return None


def _no_folder(key: str, error: OSError) -> None:
    raise ValueError(f"a new {key.split('.')[1]} folder cannot be made here ({error.strerror}: "
                     f"{error.filename}). Fix: run where it can be made, or name one with "
                     f"{key}=<folder>.")


def _refuse_on_error(check: Any) -> None:
    """Run ``check``; a ValueError (a FolderInUseError too) is one line and exit status 2
    (Hydra turns an exception raised in its hooks into a warning, and goes on)."""
    try:
        check()
    except ValueError as error:
        print(f"neurorun: config error: {error}", file=sys.stderr)
        sys.exit(CONFIG_ERROR_EXIT)
