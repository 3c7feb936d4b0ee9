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
LOCK_FILE = ".neurorun.lock"  # names the process that holds the folder


def saved_config_path(run_dir: str | Path) -> Path:
    """Where a run folder keeps its composed config."""
    return Path(run_dir) / HYDRA_DIR / "config.yaml"


def overrides_path(run_dir: str | Path) -> Path:
    """Where a run folder keeps the command line's overrides."""
    return Path(run_dir) / HYDRA_DIR / "overrides.yaml"
