"""What the `neurorun` command says when a run fails or is stopped: one line on stderr
(the traceback goes to the run's neurorun.log), the run folder of a run that never started
removed, and the exit status (2 for a config error, 128 + the signal number for a signal)."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import sysconfig
import traceback
from pathlib import Path

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from neurorun.common.atomic import is_disk_full
from neurorun.common.errors import CONFIG_ERROR_EXIT, ConfigError, FolderInUseError, one_line
from neurorun.loop.signals import exit_now, exit_status
from neurorun.record import claims
from neurorun.record.layout import HYDRA_DIR
from neurorun.record.run_folder import discard_unstarted


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


def _discard_unstarted(run_dir: Path) -> None:
    """Remove the run's folder where its run never began (Hydra's files by this job's names)."""
    hydra_cfg = HydraConfig.get()
    # not resolved again: neurorun's resolver (a sweep's job folder is locked in it) gives the
    # default; a value the command line set is plain
    subdir = (HYDRA_DIR if OmegaConf.is_interpolation(hydra_cfg, "output_subdir")
              else hydra_cfg.output_subdir)
    discard_unstarted(run_dir, hydra_cfg.job.name, subdir)


def say_failure(error: BaseException, cfg: DictConfig, run_dir: Path, exits: bool) -> str:
    """Say why the run failed in one line (the traceback goes to the run's neurorun.log) and
    remove a run folder that never started; exit (with 2 for a config error), or, in a sweep
    (``exits`` False), return the cause. Ctrl-C or a signal always exits (the resume hint is
    printed)."""
    # a resume's folder is the user's: never removed (a `${...}` that failed is no resume)
    resuming = OmegaConf.select(cfg, "resume", throw_on_resolution_failure=False)
    if isinstance(error, KeyboardInterrupt):
        if not resuming:
            _discard_unstarted(run_dir)  # stopped before generation 1 (e.g. while ray starts)
        say_interrupted(error)
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


def say_interrupted(error: KeyboardInterrupt) -> None:
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
