"""A resume's record in its run folder (.hydra/resumed_<date>/), written by the command as
the resumed run starts (the config it runs with comes from config/resume.py)."""

from __future__ import annotations

from pathlib import Path

from omegaconf import OmegaConf

from neurorun.common.atomic import atomic_write
from neurorun.loop.callbacks import Callbacks
from neurorun.loop.runner import Runner
from neurorun.loop.signals import deferred_signals
from neurorun.record.claims import new_folder
from neurorun.record.layout import resume_record


class ResumeRecord(Callbacks):
    """Records a resume in .hydra/resumed_<date>/ as its run starts (after every check, under
    the folder's lock): the config it runs with and the command line's ``overrides``. A resume
    refused or stopped before leaves no record (Hydra saves none for a resume)."""

    def __init__(self, overrides: list[str]):
        self.overrides = overrides

    def on_run_start(self, runner: Runner) -> None:
        with deferred_signals():  # a signal now waits for the record's end: never an empty folder
            folder = Path(new_folder(resume_record(runner.run_dir)))
            for name, config in (("config.yaml", OmegaConf.create(runner.composed())),
                                 ("overrides.yaml", OmegaConf.create(self.overrides))):
                atomic_write(folder / name, lambda path, c=config: OmegaConf.save(c, path))
