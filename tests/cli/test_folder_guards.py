"""What a run folder's guard refuses before anything is written (issue 51, re-probe): an
empty folder key, Hydra's saved configs under a name neurorun uses, a sweep's job in an
existing run's folder, a resume of a folder whose resume state is lost; and a resume's
overrides checked against the run's own config."""

from __future__ import annotations

import pytest

from tests.cli.test_run_folder_faults import config_error, neurorun


@pytest.mark.parametrize("args", [["hydra.run.dir="], ["hydra.run.dir=''"],
                                  ["-m", "hydra.sweep.dir="], ["-m", "hydra.sweep.subdir="]])
def test_an_empty_folder_key_is_refused(tmp_path, args):
    """`hydra.run.dir=` ran in the current folder, writing the run's files among the user's."""
    line = config_error(neurorun("debug=default", *args, cwd=tmp_path))
    assert f"{args[-1].split('=')[0]}= names no folder" in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args", [
    ["hydra.output_subdir=checkpoints"], ["hydra.output_subdir=./videos/"],
    ["hydra.output_subdir=metrics.csv"], ["hydra.output_subdir=neurorun.log"],
    ["hydra.output_subdir=.neurorun.lock"], ["hydra.output_subdir=checkpoints/saved"],
    ["hydra.output_subdir=.hydra/config.yaml"], ["hydra.output_subdir=x.log", "hydra.job.name=x"],
    ["-m", "hydra.output_subdir=checkpoints"]])
def test_hydra_configs_under_a_name_neurorun_uses_are_refused(tmp_path, args):
    """Hydra made a folder `neurorun.log/` where the log goes (a FileExistsError traceback),
    `metrics.csv/` (IsADirectoryError), or put its files into checkpoints/ (the run was then
    refused as one already there)."""
    folder = "hydra.sweep.dir" if args[0] == "-m" else "hydra.run.dir"
    line = config_error(neurorun(*args, "debug=default", f"{folder}={tmp_path / 'run'}",
                                 cwd=tmp_path))
    subdir = next(arg for arg in args if arg.startswith("hydra.output_subdir="))
    assert f"{subdir.replace('=', '=' + chr(39))}' is where Hydra saves" in line
    assert list(tmp_path.iterdir()) == []
