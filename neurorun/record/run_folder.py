"""A run folder's guard: its lock (one process at a time), the refusals before anything is
written into it (a run already there, symbolic links, a folder that cannot be made or written),
and the clean-up of what a killed write or a run that never started left.

`RunFolder` owns a folder from the start of a run to its end; the files inside are named in
`layout.py`, the checkpoint files' format is `checkpoint.py`.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shlex
import shutil
import socket
import stat
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

from neurorun.common.errors import FolderInUseError
from neurorun.common.files import entry_kind
from neurorun.record.checkpoint import load_state
from neurorun.record.claims import made_here, make_folders
from neurorun.record.layout import (
    CHECKPOINT_DIR,
    HYDRA_DIR,
    JOB_NAME,
    LOCK_FILE,
    METRIC_FILES,
    READ,
    SEARCH_RESULTS,
    STATE_FILE,
    SWEEP_RECORD,
    VIDEOS_DIR,
    hydra_names,
    linked_names,
    misplaced_names,
    resume_command,
)

log = logging.getLogger(__name__)
# the locks the command took for the run it starts, before Hydra wrote there: the run's
# RunFolder takes its folder's over (a second flock of this process's would be refused)
_handed: dict[Path, int] = {}


def holds_run(folder: str | Path) -> bool:
    """Whether `folder` holds an earlier run: checkpoints, or metric files with rows."""
    folder = Path(folder)
    metrics = (folder / name for name in METRIC_FILES)
    return (folder / CHECKPOINT_DIR).is_dir() or any(
        path.is_file() and path.stat().st_size > 0 for path in metrics)


def refuse_existing_run(folder: str | Path, source: str) -> None:
    """ValueError (one line) when a new run would write into `folder` holding a run."""
    if holds_run(folder):
        raise ValueError(
            f"{source}={str(folder)!r} already holds a run (checkpoints or metrics); a new run "
            f"there would overwrite it. Fix: `{resume_command(folder)}` to continue it, or "
            "another folder.")


def refuse_lost_state(folder: str | Path) -> None:
    """ValueError (one line) when `folder` has a checkpoint's policies but no resume state:
    its run checkpointed (the policies and state.pt are written as one unit), and resuming it
    from generation 0 would cut its metrics and replace its policies."""
    state = Path(folder) / CHECKPOINT_DIR / STATE_FILE
    kept = [name for name in READ if (Path(folder) / name).is_file()]
    if kept and not state.is_file():
        raise ValueError(
            f"resume={str(folder)!r}: {CHECKPOINT_DIR}/ holds a checkpoint's policies ("
            f"{', '.join(Path(name).name for name in kept)}) but not {STATE_FILE}, the resume "
            "state saved with them: resuming from generation 0 would cut its metrics "
            f"and replace its policies. Fix: restore {state} (from a copy of the run), or start "
            "a new run in another folder.")


def refuse_existing_sweep(folder: str | Path) -> None:
    """ValueError (one line) when a new sweep would write into `folder` holding a sweep's
    record (Hydra's basic sweeper writes it over the earlier one before any job is refused),
    a search's results, or a run (a search cut short writes no record; a job there would be
    refused)."""
    folder = Path(folder)
    held = [f"a {what} ({name})" for what, name in (("sweep", SWEEP_RECORD),
                                                     ("search", SEARCH_RESULTS))
            if (folder / name).exists()]
    held += [f"a run ({job.name}/)" for job in sorted(folder.glob("*/")) if holds_run(job)]
    if held:
        raise ValueError(
            f"hydra.sweep.dir={str(folder)!r} already holds {held[0]}; a new sweep there "
            "would overwrite its record or have its jobs refused. Fix: another "
            "hydra.sweep.dir (neurorun-plot and neurorun-compare take several sweep folders), "
            "or resume= one of its runs.")


def require_creatable(folder: str | Path, source: str) -> None:
    """ValueError (one line) when ``folder`` cannot be made here: a file of that name, or a
    parent that cannot hold it. Checked by making the missing folders and removing them
    again, before Hydra makes them (which would end in a traceback). A control character
    (a newline) is refused: every path printed after it would break."""
    path = Path(folder)
    control = [c for c in str(folder) if ord(c) < 32 or ord(c) == 127]
    if control:
        raise ValueError(f"{source}={str(folder)!r} holds a control character ({control[0]!r}), "
                         "which would break every path printed after it. Fix: a name without "
                         "one.")
    made: list[Path] = []
    try:
        for step in reversed([path, *path.parents]):
            if not step.is_dir():
                step.mkdir()
                made.append(step)
    except OSError as error:
        raise ValueError(f"{source}={str(folder)!r}: cannot make that folder ({error.strerror}: "
                         f"{error.filename}). Fix: name a folder that can be made here.") from None
    finally:
        for step in reversed(made):
            step.rmdir()


def lock_run(run_dir: str | Path) -> int:
    """Take the run folder's lock (creating the folder); returns the lock's file descriptor,
    held until it is closed (``os.close``) or the process ends, however it ends: the kernel
    releases a ``flock`` with its process, so a killed run leaves no stale lock. A lock the
    command took for this run (:func:`lock_for_run`) is handed over instead.

    Raises:
        FolderInUseError: another process holds it (the message names its pid and host).
        ValueError: the folder cannot be written (a read-only mount, no write permission), or
            has a symbolic link, FIFO, device or socket where a run writes or reads.
    """
    folder = Path(run_dir)
    handed = _handed.pop(folder.resolve(), None)
    if handed is not None:
        return handed
    refuse_unsafe_entries(folder)
    try:
        make_folders(folder)
        # not blocking: a FIFO put there after the check above is refused below, not waited on
        fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK,
                     0o644)
    except OSError as error:
        raise _unwritable(folder, error) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):  # made after the check above
        os.close(fd)
        refuse_misplaced(folder, [(LOCK_FILE, entry_kind(mode), "a regular file")])
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 256).decode(errors="replace").strip() or "another process"
        os.close(fd)
        raise FolderInUseError(
            f"run folder {str(folder)!r} is in use by {holder}: two runs in one folder would "
            "interleave its metrics and checkpoints. Fix: wait for that run to end (or stop "
            "it), or use another folder.") from None
    os.ftruncate(fd, 0)
    os.write(fd, f"neurorun pid {os.getpid()} on host {socket.gethostname()}\n".encode())
    return fd


def lock_for_run(run_dir: str | Path, *, resume: bool) -> None:
    """Take ``run_dir``'s lock for the run this process starts next, before anything is
    written there (Hydra's log and saved configs): a second command on the folder is refused
    before it writes, and a new run is refused (under the lock) where one already is. The
    run's RunFolder takes the lock over; where the run never began, :func:`unlock_unstarted`
    closes it.

    Raises: as :func:`lock_run`; ValueError for a new run into a folder that holds one.
    """
    fd = lock_run(run_dir)
    if not resume:
        try:
            refuse_existing_run(run_dir, "hydra.run.dir")
        except ValueError:
            os.close(fd)
            raise
    _handed[Path(run_dir).resolve()] = fd


def unlock_unstarted(run_dir: str | Path) -> None:
    """Close the lock :func:`lock_for_run` took for ``run_dir`` where no run took it over (its
    job failed before the run began): a sweep's process goes on to its next job."""
    fd = _handed.pop(Path(run_dir).resolve(), None)
    if fd is not None:
        os.close(fd)


def refuse_misplaced(run_dir: str | Path,
                     found: list[tuple[str, str, str]] | None = None) -> None:
    """ValueError (one line) when a name that a run or the tools open in ``run_dir`` is a
    FIFO, a socket, a device, or a folder where a file belongs (or the reverse): opening a FIFO
    blocks for good, with signals deferred while the run is set up. ``found``: what was found
    already (``layout.misplaced_names``' triples; by default Hydra's files are its defaults')."""
    found = misplaced_names(run_dir) if found is None else found
    if found:
        shown = ", ".join(f"{kind} at {name}" for name, kind, _ in found)
        name = shlex.quote(str(Path(run_dir) / found[0][0]))
        raise ValueError(
            f"run folder {str(run_dir)!r} has {shown}, where a run or the tools open "
            f"{found[0][2]}: opening it would block, fail or write into a device. Fix: remove "
            f"it (rm -r {name}), or use another folder.")


def refuse_unsafe_entries(run_dir: str | Path, job_name: Any = JOB_NAME,
                          output_subdir: Any = HYDRA_DIR) -> None:
    """ValueError (one line) where a name that a run, Hydra (its files by ``hydra.job.name``
    and ``hydra.output_subdir``) or the tools open in ``run_dir`` is a symbolic link
    (:func:`refuse_links`) or a FIFO, socket, device or the wrong kind of entry
    (:func:`refuse_misplaced`)."""
    refuse_links(run_dir, job_name, output_subdir)
    refuse_misplaced(run_dir, misplaced_names(run_dir, job_name, output_subdir))


def refuse_links(run_dir: str | Path, job_name: Any = JOB_NAME,
                 output_subdir: Any = HYDRA_DIR) -> None:
    """ValueError (one line) when a file or folder that a run writes in ``run_dir`` is a
    symbolic link (Hydra's files by their keys, ``layout.linked_names``): a write, cut or
    append would follow it out of the folder."""
    folder = Path(run_dir)
    linked = linked_names(folder, job_name, output_subdir)
    if linked:
        shown = ", ".join(f"{name} -> {os.readlink(folder / name)}" for name in linked)
        raise ValueError(
            f"run folder {str(folder)!r} has symbolic links where a run writes ({shown}); "
            "writing through them would change what lies outside the folder. Fix: replace "
            "each link by a copy of its target (remove the link, then cp -r the target to its "
            "name), or use another folder.")


def discard_unstarted(run_dir: str | Path, job_name: Any = JOB_NAME,
                      output_subdir: Any = HYDRA_DIR) -> bool:
    """Remove ``run_dir`` when it holds nothing but what a run puts there before its first
    generation (its lock, Hydra's folder and log, named by ``hydra.job.name`` and
    ``hydra.output_subdir``, empty metric files); whether it was."""
    folder = Path(run_dir)
    if not folder.is_dir() or folder.is_symlink():
        return False
    before_start = {LOCK_FILE, *(PurePosixPath(name).parts[0]
                                 for name in hydra_names(job_name, output_subdir))}
    if all(p.name in before_start or (p.name in METRIC_FILES and not p.is_symlink()
                                      and p.stat().st_size == 0) for p in folder.iterdir()):
        shutil.rmtree(folder, ignore_errors=True)
        return True
    return False


def _unwritable(folder: Path, error: OSError) -> ValueError:
    return ValueError(
        f"run folder {str(folder)!r} cannot be written ({error.strerror or error}): a run writes "
        "its lock, metrics and checkpoints there. Fix: make it writable (chmod u+w), or copy it "
        "to a writable place (cp -r) and resume the copy, or use another folder.")


def remove_partial_writes(run_dir: str | Path) -> list[Path]:
    """Delete the temporary files (`.<name>.*.tmp`, an MP4's `.tmp.mp4`) that a write killed
    mid-way left in `<run>/checkpoints/` and `<run>/videos/`; returns what was deleted. Only
    under the folder's lock (:func:`lock_run`): another run's live temporary files look the
    same."""
    removed = []
    for name in (CHECKPOINT_DIR, VIDEOS_DIR):
        folder = Path(run_dir) / name
        if folder.is_dir():
            removed += sorted([*folder.glob(".*.tmp"), *folder.glob(".*.tmp.mp4")])
    for path in removed:
        path.unlink(missing_ok=True)
    return removed


def _check_writable(folder: Path) -> None:
    """ValueError (one line) when checkpoints cannot be written into ``folder``: found at the
    start, not after every generation ran."""
    created = not folder.exists()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
        if created:  # the first checkpoint makes it; a run that never starts leaves nothing
            folder.rmdir()
    except OSError as error:
        raise ValueError(f"{str(folder)!r} cannot hold checkpoints ({error.strerror or error}). "
                         "Fix: make it a writable folder (chmod u+w), or run in another folder."
                         ) from None


class RunFolder:
    """A run folder this process owns from construction to ``release``: its lock is taken
    before anything in it is read or cleaned; a new run is refused where one is already
    (``resume``: the saved resume state is loaded instead); temporary files that a killed
    write left are deleted. A new folder that never got more than its lock is removed again on
    ``release(discard_if_empty=True)``.

    Raises (construction):
        FolderInUseError: another process holds it.
        ValueError: a new run into a folder holding one; resume of a folder with a corrupt
            state, or with a checkpoint's policies and no state (one line each, with the fix).
            A resumed folder without a state (its run never checkpointed) starts again from
            generation 0, saying so.
    """

    def __init__(self, path: str | Path, *, resume: bool):
        self.path = Path(path)
        self._created = not self.path.exists() or made_here(self.path)
        self._lock: int | None = lock_run(self.path)
        try:
            if not resume:
                refuse_existing_run(self.path, "run folder")
            else:
                refuse_lost_state(self.path)
            remove_partial_writes(self.path)
            _check_writable(self.path / CHECKPOINT_DIR)
            self.state = load_state(self.path) if resume else None
            if resume and self.state is None:  # killed, or a full disk, before its first one
                log.warning("resume=%s: no %s/%s (the run stopped before its first "
                            "checkpoint): it starts again from generation 0, and its metric "
                            "rows so far are replaced", self.path, CHECKPOINT_DIR, STATE_FILE)
        except BaseException:
            self.release(discard_if_empty=True)
            raise

    def release(self, *, discard_if_empty: bool = False, at_exit: bool = False) -> None:
        """Give the folder up (once); with ``discard_if_empty``, remove a folder this run
        created and left as it was before a first generation (``discard_unstarted``);
        ``at_exit``: the lock stays held until the process ends (a stopped run whose process
        still works: a resume must not start beside it)."""
        if self._lock is None:
            return
        if not at_exit:
            os.close(self._lock)
        self._lock = None
        if discard_if_empty and self._created:
            discard_unstarted(self.path)
