"""Checkpoints of a run folder: policy pickles, weights-only twins and the resume state.

    <run>/checkpoints/last.pkl   the reference's policy pickle (problem.save_solution)
    <run>/checkpoints/last.pt    weights only: loads with torch.load(weights_only=True)
    <run>/checkpoints/last.json  what the weights mean: env, architecture, sizes, obs stats
    <run>/checkpoints/best.*     the same for the best solution so far
    <run>/checkpoints/state.pt   everything `resume=<run>` needs to continue bit for bit

Every file is written atomically: to a temporary file in the same folder, flushed and
fsync-ed, then renamed over the old one, so a crash at any moment leaves the previous
checkpoint whole.
"""

from __future__ import annotations

import errno
import fcntl
import json
import math
import os
import shutil
import socket
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import ConfigAttributeError, ConfigKeyError

from neurorun.config_checks import FolderInUseError
from neurorun.imports import code_in_config, refuse_untrusted
from neurorun.layout import (
    CHECKPOINT_DIR,
    HYDRA_DIR,
    LOCK_FILE,
    LOG_FILE,
    STATE_FILE,
    SWEEP_RECORD,
    linked_names,
    saved_config_path,
)
from neurorun.saved_yaml import env_reads, read_config, refuse_env_reads, without_env_reads
from neurorun.state_record import check_record

Write = Callable[[Path], None]  # writes one file's content to the path it is given


class DiskFullError(OSError):
    """No space left where files are written as one unit (the previous files stay)."""


def is_disk_full(error: BaseException) -> bool:
    """An OSError saying no space (or quota) is left."""
    return isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT)


def _disk_full(folder: Path, error: BaseException) -> bool:
    """Whether ``error`` came from a full disk: ENOSPC, or a library's own error (torch's
    zip writer reports "unexpected pos") while the folder's file system has no space left."""
    if is_disk_full(error):
        return True
    try:
        return shutil.disk_usage(folder).free < 1 << 20
    except OSError:
        return False


def atomic_write_all(files: Sequence[tuple[str | Path, Write]]) -> None:
    """Write several files as one unit: each ``write(temporary_path)`` first (fsynced, in the
    target's folder), then every rename, so either all files are new or all are as before
    (renames need no space: a full disk stops the unit before any file changes).

    Raises:
        DiskFullError: no space left (one line naming the folder).
    """
    written: list[tuple[Path, Path]] = []
    try:
        for path, write in files:
            path = Path(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp",
                                            dir=path.parent)
            os.close(handle)
            written.append((Path(name), path))
            write(Path(name))
            with open(name, "rb+") as file:
                os.fsync(file.fileno())
            os.chmod(name, 0o666 & ~_umask())  # mkstemp creates 0600; use the usual mode
    except BaseException as error:
        for temporary, _ in written:
            temporary.unlink(missing_ok=True)
        folder = written[-1][1].parent if written else Path(".")
        if isinstance(error, Exception) and _disk_full(folder, error):
            raise DiskFullError(errno.ENOSPC, "No space left on device: none of the files was "
                                "written, the previous ones are intact", str(folder)) from error
        raise
    try:
        for temporary, path in written:
            os.replace(temporary, path)
    finally:  # a failed rename (a crash is worse: the next start cleans up) leaves no temporary
        for temporary, _ in written:
            temporary.unlink(missing_ok=True)
    for folder in {path.parent for _, path in written}:
        _fsync_directory(folder)


def atomic_write(path: str | Path, write: Write) -> None:
    """Write one file atomically (see atomic_write_all): a failure leaves any previous
    `path` untouched."""
    atomic_write_all([(path, write)])


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _fsync_directory(folder: Path) -> None:
    """Make the rename itself durable (a no-op where directories cannot be opened)."""
    try:
        handle = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)


def torch_file(obj: Any) -> Write:
    return lambda temporary: torch.save(obj, temporary)


def text_file(text: str) -> Write:
    return lambda temporary: temporary.write_text(text, encoding="utf-8")


def atomic_write_text(text: str, path: str | Path) -> None:
    atomic_write(path, text_file(text))


def _as_list(value: Any) -> Any:
    return value.tolist() if isinstance(value, torch.Tensor) else value


# A policy's .json: what its weights mean. The keys a policy is rebuilt from
# (tools/loading.py), with their types; policy_meta writes them, with the sizes.
META_TYPES = (("env", "a string", lambda v: isinstance(v, str)),
              ("architecture", "a string", lambda v: isinstance(v, str)),
              ("network_args", "a JSON object or null", lambda v: v is None or isinstance(v, dict)),
              ("env_config", "a JSON object or null", lambda v: v is None or isinstance(v, dict)))


def policy_meta(problem: Any, env_config: Any, network_args: Any) -> dict[str, Any]:
    """The .json of a run's policies (``META_TYPES`` and the sizes): the env with its backend
    (``envpool::Id``), its keyword arguments, the network and its arguments (plain values of
    the run's config)."""
    return {"env": problem.env_options.spec, "env_config": env_config,
            "architecture": problem.architecture, "network_args": network_args,
            "obs_length": problem.obs_length, "act_length": problem.act_length,
            "observation_normalization": problem.observation_normalization}


def policy_files(problem: Any, solution: torch.Tensor, stem: str | Path,
                 meta: Mapping[str, Any], obs_stats: Any = None) -> list[tuple[Path, Write]]:
    """The files of one policy, for atomic_write_all: `<stem>.pkl` (problem.save_solution),
    `<stem>.pt` and `<stem>.json`.

    Args:
        problem: the problem that evaluated `solution` (knows the env, network, obs stats).
        solution: (D,) parameter vector.
        stem: path without suffix, e.g. `<run>/checkpoints/best`.
        meta: what the weights mean (env, architecture, network_args, generation, score...).
        obs_stats: the observation statistics `solution` was evaluated with (a RunningNorm;
            default: the problem's current ones).
    """
    stem = Path(stem)
    solution = solution.detach().to("cpu").clone()
    norm = getattr(problem, "obs_stats", None) if obs_stats is None else obs_stats
    stats = {"obs_mean": None, "obs_stdev": None} if norm is None else norm.export()
    weights = {"solution": solution, **{k: v for k, v in stats.items() if v is not None}}
    described = {**meta, "solution_length": int(solution.numel()),
                 **{k: _as_list(v) for k, v in stats.items()}}
    text = json.dumps(_strict(described), indent=2, default=str, allow_nan=False) + "\n"
    return [(stem.with_suffix(".pkl"), lambda tmp: problem.save_solution(solution, tmp, obs_stats)),
            (stem.with_suffix(".pt"), torch_file(weights)),
            (stem.with_suffix(".json"), text_file(text))]


def _strict(value: Any) -> Any:
    """JSON has no NaN or infinity: they are written as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {key: _strict(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_strict(item) for item in value]
    return value


def holds_run(folder: str | Path) -> bool:
    """Whether `folder` holds an earlier run: checkpoints, or metric files with rows."""
    folder = Path(folder)
    from neurorun.loggers.files import METRIC_FILES

    metrics = (folder / name for name in METRIC_FILES)
    return (folder / CHECKPOINT_DIR).is_dir() or any(
        path.is_file() and path.stat().st_size > 0 for path in metrics)


def refuse_existing_run(folder: str | Path, source: str) -> None:
    """ValueError (one line) when a new run would write into `folder` holding a run."""
    if holds_run(folder):
        raise ValueError(
            f"{source}={str(folder)!r} already holds a run (checkpoints or metrics); a new run "
            f"there would overwrite it. Fix: resume={str(folder)!r} to continue it, or another "
            "folder.")


def refuse_existing_sweep(folder: str | Path) -> None:
    """ValueError (one line) when a new sweep would write into `folder` holding a sweep: Hydra
    writes its multirun.yaml over the earlier one before any job is refused."""
    if (Path(folder) / SWEEP_RECORD).exists():
        raise ValueError(
            f"hydra.sweep.dir={str(folder)!r} already holds a sweep ({SWEEP_RECORD}); a new "
            "sweep there would overwrite its record. Fix: another hydra.sweep.dir "
            "(neurorun-plot and neurorun-compare take several sweep folders), or resume= one "
            "of its runs.")


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
    releases a ``flock`` with its process, so a killed run leaves no stale lock.

    Raises:
        FolderInUseError: another process holds it (the message names its pid and host).
        ValueError: the folder cannot be written (a read-only mount, no write permission).
    """
    folder = Path(run_dir)
    refuse_links(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as error:
        raise _unwritable(folder, error) from None
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


def refuse_links(run_dir: str | Path) -> None:
    """ValueError (one line) when a file or folder that a run writes in ``run_dir`` is a
    symbolic link: a write, cut or append would follow it out of the folder."""
    folder = Path(run_dir)
    linked = linked_names(folder)
    if linked:
        shown = ", ".join(f"{name} -> {os.readlink(folder / name)}" for name in linked)
        raise ValueError(
            f"run folder {str(folder)!r} has symbolic links where a run writes ({shown}); "
            "writing through them would change what lies outside the folder. Fix: replace "
            "each link by a copy of its target (remove the link, then cp -r the target to its "
            "name), or use another folder.")


def discard_unstarted(run_dir: str | Path) -> bool:
    """Remove ``run_dir`` when it holds nothing but what a run puts there before its first
    generation (its lock, Hydra's folder and log, empty metric files); whether it was."""
    from neurorun.loggers.files import METRIC_FILES  # the loggers import this module's layout

    folder = Path(run_dir)
    if not folder.is_dir() or folder.is_symlink():
        return False
    before_start = {LOCK_FILE, HYDRA_DIR, LOG_FILE}
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


def require_free(run_dir: str | Path) -> None:
    """FolderInUseError when another process holds ``run_dir``, ValueError when it has links
    where a run writes or cannot be written (checked before Hydra writes its files into a
    folder; the run takes the lock itself when it starts)."""
    refuse_links(run_dir)
    folder = Path(run_dir)
    if (folder / LOCK_FILE).is_file():
        os.close(lock_run(folder))
    elif folder.is_dir():  # no lock to take, but Hydra's writes there would fail: try one
        try:
            with tempfile.TemporaryFile(dir=folder):
                pass
        except OSError as error:
            raise _unwritable(folder, error) from None


def remove_partial_writes(run_dir: str | Path) -> list[Path]:
    """Delete the temporary files (`.<name>.*.tmp`) that a write killed mid-way left in
    `<run>/checkpoints/`; returns what was deleted. Only under the folder's lock
    (:func:`lock_run`): another run's live temporary files look the same."""
    folder = Path(run_dir) / CHECKPOINT_DIR
    removed = sorted(folder.glob(".*.tmp")) if folder.is_dir() else []
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
        ValueError: a new run into a folder holding one; resume of a folder without a state,
            or with a corrupt one (one line each, with the fix).
    """

    def __init__(self, path: str | Path, *, resume: bool):
        self.path = Path(path)
        self._created = not self.path.exists()
        self._lock: int | None = lock_run(self.path)
        try:
            if not resume:
                refuse_existing_run(self.path, "run folder")
            remove_partial_writes(self.path)
            _check_writable(self.path / CHECKPOINT_DIR)
            self.state = load_state(self.path) if resume else None
            if resume and self.state is None:
                raise ValueError(
                    f"resume={str(self.path)!r}: no checkpoints/state.pt there yet; expected a "
                    "run that wrote at least one checkpoint. Fix: start it again without resume.")
        except BaseException:
            self.release(discard_if_empty=True)
            raise

    def release(self, *, discard_if_empty: bool = False) -> None:
        """Give the folder up (once); with ``discard_if_empty``, remove a folder this run
        created and left as it was before a first generation (``discard_unstarted``)."""
        if self._lock is None:
            return
        os.close(self._lock)
        self._lock = None
        if discard_if_empty and self._created:
            discard_unstarted(self.path)


def state_file(state: Mapping[str, Any], run_dir: str | Path) -> tuple[Path, Write]:
    """The resume state's file `<run>/checkpoints/state.pt`, for atomic_write_all."""
    return Path(run_dir) / CHECKPOINT_DIR / STATE_FILE, torch_file(dict(state))


def load_state(run_dir: str | Path) -> dict[str, Any] | None:
    """The resume state of `run_dir`, or None when it has none yet.

    Loaded with `torch.load(weights_only=True)`: tensors, numbers, strings, lists and dicts,
    never code, so a state.pt from a shared folder cannot run anything.

    Raises:
        ValueError: the file is truncated, not a torch file, holds other objects, or a record
            no run writes (state_record.check_record) (one line).
    """
    path = Path(run_dir) / CHECKPOINT_DIR / STATE_FILE
    if not path.is_file():
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # pickle, zip and torch all raise their own types
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(
            f"resume: {path} cannot be loaded as plain data ({type(error).__name__}: "
            f"{reason[:200]}); it is truncated, corrupt or holds objects that could run code. "
            "Fix: resume from an intact copy of the run, or start a new run.") from error
    if not isinstance(state, dict) or "generation" not in state:
        raise ValueError(f"resume: {path} is not a neurorun resume state (no 'generation'). "
                         "Fix: resume from the run's own folder, or start a new run.")
    check_record(state, path)  # plain data can still lie: a negative count, a zero stdev
    return state


def require_saved_config(run_dir: str | Path) -> Path:
    """The saved config of the run in `run_dir`; FileNotFoundError (one line) if none."""
    path = saved_config_path(run_dir)
    if not path.is_file():
        raise FileNotFoundError(
            f"resume={str(run_dir)!r}: no saved config at {path}; expected the folder of an "
            "earlier neurorun run (it holds .hydra/config.yaml). Fix: pass that folder.")
    return path


FIXED_ON_RESUME = {  # keys a resumed run cannot change, and why
    "seed": "its random state is saved",
    "network": "the checkpoint holds that network's parameters",
    "env.id": "its policy, observation statistics and metrics belong to that env",
}


def load_run_config(run_dir: str | Path, overrides: list[str]) -> DictConfig:
    """The saved config of `run_dir` with command-line `overrides` (key=value) on top.

    Raises:
        FileNotFoundError: `run_dir` has no saved config.
        ValueError: an override changes a config group (e.g. `algo=snes`) or misses a key;
            the file is no bounded YAML mapping, or reads the environment without trust_code.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser

    source = require_saved_config(run_dir)
    config = read_config(source)  # bounded: no aliases, UTF-8, a mapping
    parsed = OverridesParser.create().parse_overrides(overrides)
    opt_in = f"resume with trust_code=true: neurorun resume={str(run_dir)!r} trust_code=true"
    if not any(o.key_or_group == "trust_code" and o.value() is True for o in parsed):
        # nothing below may resolve the file's ${oc.env:...}: the keys given here replace them
        refuse_env_reads({key: value for key, value in env_reads(config).items()
                          if not any(_covers(o.key_or_group, key) for o in parsed)}, source, opt_in)
        config = without_env_reads(config)
    named = code_in_config(config)
    with open_dict(config):
        config.trust_code = False  # only the command line trusts code, never the file itself
    OmegaConf.set_struct(config, True)  # a misspelt key fails instead of adding a new one
    for override in parsed:
        key = override.key_or_group
        named = {k: v for k, v in named.items() if not _covers(key, k)}  # given here: the user's
        if key == "resume" or key.startswith("hydra."):
            continue
        if override.is_delete():
            raise ValueError(f"resume: cannot delete {key!r} from a saved run's config")
        node = OmegaConf.select(config, key, default=None, throw_on_missing=False)
        fixed = next((why for prefix, why in FIXED_ON_RESUME.items()
                      if key == prefix or key.startswith(prefix + ".")), None)
        value = override.value()
        if fixed and (OmegaConf.to_container(node) if OmegaConf.is_config(node) else node) != value:
            raise ValueError(
                f"resume: {key}={value!r} but the run was started with {key}={node!r}; a resumed "
                f"run keeps it ({fixed}). Fix: drop {key}=, or start a new run in another folder.")
        if isinstance(node, DictConfig) and not override.is_add():
            raise ValueError(
                f"resume: {override.input_line!r} picks a config group; a resumed run keeps its "
                f"groups. Fix: override single keys (e.g. {key}.<option>=...) or start a new run."
            )
        try:
            OmegaConf.update(config, key, override.value(), merge=True,
                             force_add=override.is_add() or override.is_force_add())
        except (ConfigAttributeError, ConfigKeyError) as error:
            raise ValueError(
                f"resume: {override.input_line!r}: the saved config has no key {key!r}. "
                f"Fix: check the spelling, or add it with +{override.input_line}."
            ) from error
    OmegaConf.set_struct(config, False)
    if config.trust_code is not True:  # text such as `no` is truthy, and trusts nothing
        refuse_untrusted(named, source, opt_in)
    config.resume = str(run_dir)
    return config


def _covers(override_key: str, key: str) -> bool:
    """Whether setting ``override_key`` sets ``key`` (itself, a parent or a child of it)."""
    return override_key == key or key.startswith(override_key + ".") or \
        override_key.startswith(key + ".")
