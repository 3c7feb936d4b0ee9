"""The names of a run folder and inside it, in one place (metric file names:
neurorun.loggers.files).

    runs/<env>/<algo>/<date>_<time>_s<seed>/   a run's folder (run_dir_name)

    <run>/.hydra/config.yaml        the composed config (what resume= starts from)
    <run>/.hydra/overrides.yaml     the command line's overrides
    <run>/checkpoints/              best.* and last.* policies, state.pt (the resume state)
    <run>/.neurorun.lock            held (flock) by the process running in the folder
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from neurorun.envs.backends import env_slug

HYDRA_DIR = ".hydra"  # Hydra's files (hydra.output_subdir)
CHECKPOINT_DIR = "checkpoints"
STATE_FILE = "state.pt"  # in CHECKPOINT_DIR
BEST_POLICY, LAST_POLICY = "best", "last"  # policy stems in CHECKPOINT_DIR (.pt, .json, .pkl)
LOCK_FILE = ".neurorun.lock"  # names the process that holds the folder
LOG_FILE = "neurorun.log"  # Hydra's log of the run (hydra.job.name)
SWEEP_RECORD = "multirun.yaml"  # Hydra's record of a sweep, at the top of its folder
TENSORBOARD_DIR = "tensorboard"  # the trackers' files (logger=...), when they write locally
WANDB_DIR = "wandb"  # made by wandb in the folder it is given
MLFLOW_DB, MLFLOW_ARTIFACTS = "mlflow.db", "mlartifacts"  # MLflow's default store
# what neurorun, Hydra and the trackers write, cut or append to in a run folder, besides the
# metric files: none may be a symbolic link, which the write would follow out of the folder
WRITTEN = (LOCK_FILE, LOG_FILE, CHECKPOINT_DIR, HYDRA_DIR, f"{HYDRA_DIR}/config.yaml",
           f"{HYDRA_DIR}/overrides.yaml", f"{HYDRA_DIR}/hydra.yaml", TENSORBOARD_DIR, WANDB_DIR,
           MLFLOW_DB, MLFLOW_ARTIFACTS)


def saved_config_path(run_dir: str | Path) -> Path:
    """Where a run folder keeps its composed config."""
    return Path(run_dir) / HYDRA_DIR / "config.yaml"


def policy_path(run_dir: str | Path, stem: str, suffix: str = "") -> Path:
    """``<run>/checkpoints/<stem><suffix>``: a policy's file (``suffix`` ".pt", ".json",
    ".pkl"; "": the stem the files share)."""
    return Path(run_dir) / CHECKPOINT_DIR / f"{stem}{suffix}"


def linked_names(run_dir: str | Path) -> list[str]:
    """The names of ``run_dir`` that neurorun writes and that are symbolic links."""
    from neurorun.loggers.files import METRIC_FILES  # the loggers import this module

    folder = Path(run_dir)
    return [name for name in (*WRITTEN, *METRIC_FILES) if (folder / name).is_symlink()]


def overrides_path(run_dir: str | Path) -> Path:
    """Where a run folder keeps the command line's overrides."""
    return Path(run_dir) / HYDRA_DIR / "overrides.yaml"


def run_dir_name(resume: Any, env_id: Any, algo: Any, seed: Any) -> str:
    """`runs/<env>/<algo>/<date>_<time>_s<seed>` (`_2`, `_3`, ... when that folder exists), or
    the folder being resumed."""
    if resume not in (None, ""):
        return str(resume)
    stamp = datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    name = f"runs/{env_slug(env_id)}/{algo}/{stamp}_s{seed}"
    count = 1
    while Path(name if count == 1 else f"{name}_{count}").exists():  # started in the same second
        count += 1
    return name if count == 1 else f"{name}_{count}"


def output_subdir(resume: Any) -> str:
    """Hydra's files: `.hydra`, or a fresh subfolder of it when resuming (keeps the original)."""
    if resume in (None, ""):
        return HYDRA_DIR
    return f"{HYDRA_DIR}/resumed_" + datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
