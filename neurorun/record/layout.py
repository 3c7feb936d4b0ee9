"""The names of a run folder and inside it, in one place.

    runs/<env>/<algo>/<date>_<time>_s<seed>/   a run's folder (run_dir_name)
    runs/multirun/<date>_<time>/               a sweep's folder (sweep_dir_name)

    <run>/.hydra/config.yaml        the composed config (what resume= starts from)
    <run>/.hydra/overrides.yaml     the command line's overrides
    <run>/.hydra/resumed_<date>/    a resume's config.yaml and overrides.yaml
    <run>/checkpoints/              best.* and last.* policies, state.pt (the resume state)
    <run>/videos/                   gen_<n>.gif or .mp4 (logger.video_every)
    <run>/.neurorun.lock            held (flock) by the process running in the folder
"""

from __future__ import annotations

import hashlib
import re
import shlex
import stat
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any

from neurorun.common.files import entry_kind
from neurorun.envs.names import env_slug
from neurorun.record.claims import folder_name

HYDRA_DIR = ".hydra"  # Hydra's files (hydra.output_subdir)
CHECKPOINT_DIR = "checkpoints"
STATE_FILE = "state.pt"  # in CHECKPOINT_DIR
BEST_POLICY, LAST_POLICY = "best", "last"  # policy stems in CHECKPOINT_DIR (.pt, .json, .pkl)
LOCK_FILE = ".neurorun.lock"  # names the process that holds the folder
JOB_NAME = "neurorun"  # hydra.job.name, which names Hydra's log of the run
LOG_FILE = f"{JOB_NAME}.log"
HYDRA_SAVED = ("config.yaml", "overrides.yaml", "hydra.yaml")  # in hydra.output_subdir
SWEEP_RECORD = "multirun.yaml"  # Hydra's record of a sweep, at the top of its folder
SEARCH_RESULTS = "optimization_results.yaml"  # the Optuna sweeper's, at the end of a search
TENSORBOARD_DIR = "tensorboard"  # the trackers' files (logger=...), when they write locally
WANDB_DIR = "wandb"  # made by wandb in the folder it is given
MLFLOW_DB, MLFLOW_ARTIFACTS = "mlflow.db", "mlartifacts"  # MLflow's default store
VIDEOS_DIR = "videos"  # the run's videos (logger.video_every): gen_<n>.gif or .mp4
CSV_NAME = "metrics.csv"  # the metrics (loggers/files.py writes them)
JSONL_NAME = "metrics.jsonl"
METRIC_FILES = (CSV_NAME, JSONL_NAME)  # what a run folder's metrics are written to


def hydra_names(job_name: Any = JOB_NAME, output_subdir: Any = HYDRA_DIR) -> tuple[str, ...]:
    """What Hydra writes in a run folder: its log ``<hydra.job.name>.log``, and the folder
    ``hydra.output_subdir`` with its saved configs (none where that is null: a resume)."""
    saved = () if output_subdir is None else (
        str(output_subdir), *(f"{output_subdir}/{name}" for name in HYDRA_SAVED))
    return f"{job_name}.log", *saved


# what neurorun, Hydra and the trackers write, cut or append to in a run folder, besides the
# metric files: none may be a symbolic link, which the write would follow out of the folder
WRITTEN = (LOCK_FILE, *hydra_names(), CHECKPOINT_DIR, TENSORBOARD_DIR, WANDB_DIR, MLFLOW_DB,
           MLFLOW_ARTIFACTS, VIDEOS_DIR)
FOLDERS = (CHECKPOINT_DIR, HYDRA_DIR, TENSORBOARD_DIR, WANDB_DIR, MLFLOW_ARTIFACTS,
           VIDEOS_DIR)  # of WRITTEN
# what a run or the tools read in a run folder besides WRITTEN and the metric files
READ = tuple(f"{CHECKPOINT_DIR}/{name}" for name in (
    STATE_FILE, *(f"{stem}{suffix}" for stem in (BEST_POLICY, LAST_POLICY)
                  for suffix in (".pt", ".json", ".pkl"))))
MAX_NAME = 64  # characters of a part of a new folder's name (a file system's limit: 255 bytes)


def saved_config_path(run_dir: str | Path) -> Path:
    """Where a run folder keeps its composed config."""
    return Path(run_dir) / HYDRA_DIR / "config.yaml"


def policy_path(run_dir: str | Path, stem: str, suffix: str = "") -> Path:
    """``<run>/checkpoints/<stem><suffix>``: a policy's file (``suffix`` ".pt", ".json",
    ".pkl"; "": the stem the files share)."""
    return Path(run_dir) / CHECKPOINT_DIR / f"{stem}{suffix}"


def video_path(run_dir: str | Path, generation: int, suffix: str) -> Path:
    """``<run>/videos/gen_<generation><suffix>``: a run's video (``suffix`` ".gif", ".mp4")."""
    return Path(run_dir) / VIDEOS_DIR / f"gen_{generation}{suffix}"


def written_names(job_name: Any = JOB_NAME, output_subdir: Any = HYDRA_DIR) -> tuple[str, ...]:
    """The names of a run folder that neurorun or Hydra writes (Hydra's files under
    ``hydra.job.name`` and ``hydra.output_subdir``: :func:`hydra_names`), each once."""
    return tuple(dict.fromkeys((*WRITTEN, *hydra_names(job_name, output_subdir),
                                *METRIC_FILES)))


def linked_names(run_dir: str | Path, job_name: Any = JOB_NAME,
                 output_subdir: Any = HYDRA_DIR) -> list[str]:
    """The names of ``run_dir`` that neurorun or Hydra writes (:func:`written_names`) and that
    are symbolic links."""
    folder = Path(run_dir)
    return [name for name in written_names(job_name, output_subdir)
            if (folder / name).is_symlink()]


def taken_name(path: str, *others: str) -> str | None:
    """The name of a run folder that neurorun uses (WRITTEN, the metric files, READ, ``others``)
    that ``path`` (relative to the folder) is or lies inside, or None. Hydra's own folder
    (HYDRA_DIR) is not taken: what Hydra saves there is its own."""
    parts = PurePosixPath(path).parts
    for name in (*WRITTEN, *METRIC_FILES, *READ, *others):
        own = PurePosixPath(name).parts
        if name != HYDRA_DIR and parts[:len(own)] == own:
            return name
    return None


def misplaced_names(run_dir: str | Path, job_name: Any = JOB_NAME,
                    output_subdir: Any = HYDRA_DIR) -> list[tuple[str, str, str]]:
    """``(name, what it is, what belongs there)`` for each name of ``run_dir`` that a run or
    the tools open (WRITTEN, Hydra's files under ``hydra.job.name`` and
    ``hydra.output_subdir``: :func:`hydra_names`, the metric files, READ) and that holds
    neither a symbolic link (:func:`linked_names`) nor what they expect there: a regular file,
    or a folder for FOLDERS and ``output_subdir``. A FIFO blocks whoever opens it, a device
    takes what is written to it, and a folder cannot be opened as a file."""
    folders = {*FOLDERS, str(output_subdir)}
    found = []
    for name in dict.fromkeys((*written_names(job_name, output_subdir), *READ)):
        try:
            mode = (Path(run_dir) / name).lstat().st_mode
        except OSError:  # not there (or its folder is not): a run makes it
            continue
        expected = stat.S_ISDIR if name in folders else stat.S_ISREG
        if not (expected(mode) or stat.S_ISLNK(mode)):
            found.append((name, entry_kind(mode),
                          "a folder" if name in folders else "a regular file"))
    return found


def overrides_path(run_dir: str | Path) -> Path:
    """Where a run folder keeps the command line's overrides."""
    return Path(run_dir) / HYDRA_DIR / "overrides.yaml"


def _stamp() -> str:
    return datetime.now().strftime("%Y-%m-%d_%H-%M-%S")


def name_part(text: Any) -> str:
    """``text`` as one folder name: letters, digits and `._+-` (others become `_`), at most
    MAX_NAME characters (a longer one keeps its start and ends with a hash of the whole, so two
    differ), never `.` or `..`."""
    name = re.sub(r"[^A-Za-z0-9._+-]+", "_", str(text)).strip("_") or "_"
    if len(name) > MAX_NAME:
        name = f"{name[:MAX_NAME - 13]}-{hashlib.sha256(str(text).encode()).hexdigest()[:12]}"
    return "_" if set(name) == {"."} else name


def run_dir_name(resume: Any, env_id: Any, algo: Any, seed: Any) -> str:
    """The folder being resumed, or a new run's `runs/<env>/<algo>/<date>_<time>_s<seed>`
    (`_2`, `_3`, ... when that folder exists; the command claims it: ``claims.folder_name``)."""
    if resume not in (None, ""):
        return str(resume)
    parts = (env_slug(env_id), algo, f"{_stamp()}_s{seed}")
    return folder_name("run", "runs/" + "/".join(name_part(part) for part in parts))


def job_dir_name(number: Any, env_id: Any, algo: Any, seed: Any) -> str:
    """A sweep's job's subfolder: `<number>_<env>_<algo>_s<seed>`."""
    return name_part(f"{number}_{env_slug(env_id)}_{algo}_s{seed}")


def sweep_dir_name() -> str:
    """A new sweep's `runs/multirun/<date>_<time>` (`_2`, ... when that folder exists; the
    command claims it)."""
    return folder_name("sweep", f"runs/multirun/{_stamp()}")


def output_subdir(resume: Any) -> str | None:
    """Where Hydra saves its files: `.hydra`; none for a resumed run, which keeps the original
    and records itself in :func:`resume_record` once it starts."""
    return HYDRA_DIR if resume in (None, "") else None


def resume_record(run_dir: str | Path) -> Path:
    """``<run>/.hydra/resumed_<date>``: where a resume that starts now records itself (the
    name of a new folder: ``claims.new_folder`` adds `_2` after another in the same second)."""
    return Path(run_dir) / HYDRA_DIR / f"resumed_{_stamp()}"


def resume_command(run_dir: str | Path) -> str:
    """``neurorun resume=<run_dir>`` as a shell and Hydra's override parser both read it: a
    path of other characters than letters, digits and `_./-` is quoted for Hydra (its quote
    and the backslashes before one escaped, `${` kept from resolving), then for the shell."""
    path = str(run_dir)
    if re.fullmatch(r"[A-Za-z0-9_./-]+", path):
        return f"neurorun resume={path}"
    escaped = re.sub(r'(\\*)("|$)', lambda m: m[1] * 2 + ("\\" + m[2] if m[2] else ""), path)
    escaped = escaped.replace("${", "\\${")  # OmegaConf's escape: the path, not a lookup
    return "neurorun " + shlex.quote(f'resume="{escaped}"')
