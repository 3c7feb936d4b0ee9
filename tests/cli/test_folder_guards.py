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
