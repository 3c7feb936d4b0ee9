"""The names inside a run folder, in one place (metric file names: neurorun.loggers.files).

    <run>/.hydra/config.yaml        the composed config (what resume= starts from)
    <run>/.hydra/overrides.yaml     the command line's overrides
    <run>/checkpoints/              best.* and last.* policies, state.pt (the resume state)
    <run>/.neurorun.lock            held (flock) by the process running in the folder
"""

from __future__ import annotations

from pathlib import Path

HYDRA_DIR = ".hydra"  # Hydra's files (hydra.output_subdir)
CHECKPOINT_DIR = "checkpoints"
STATE_FILE = "state.pt"  # in CHECKPOINT_DIR
BEST_POLICY, LAST_POLICY = "best", "last"  # policy stems in CHECKPOINT_DIR (.pt, .json, .pkl)
LOCK_FILE = ".neurorun.lock"  # names the process that holds the folder
LOG_FILE = "neurorun.log"  # Hydra's log of the run (hydra.job.name)
SWEEP_RECORD = "multirun.yaml"  # Hydra's record of a sweep, at the top of its folder
# what neurorun, Hydra and the trackers write, cut or append to in a run folder, besides the
# metric files: none may be a symbolic link, which the write would follow out of the folder
WRITTEN = (LOCK_FILE, LOG_FILE, CHECKPOINT_DIR, HYDRA_DIR, f"{HYDRA_DIR}/config.yaml",
           f"{HYDRA_DIR}/overrides.yaml", f"{HYDRA_DIR}/hydra.yaml", "tensorboard", "wandb",
           "mlflow.db", "mlartifacts")


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
