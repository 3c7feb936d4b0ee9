"""What a run folder's guard refuses before anything is written: an
empty folder key, Hydra's saved configs under a name neurorun uses, a sweep's job in an
existing run's folder, a resume of a folder whose resume state is lost; and a resume's
overrides checked against the run's own config."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from neurorun.record.layout import LOCK_FILE
from neurorun.record.run_folder import RunFolder
from tests.cli.test_run_folder_faults import config_error, neurorun


@pytest.mark.parametrize("args", [["hydra.run.dir="], ["hydra.run.dir=''"],
                                  ["-m", "hydra.sweep.dir="], ["-m", "hydra.sweep.subdir="]])
def test_an_empty_folder_key_is_refused(tmp_path, args):
    """`hydra.run.dir=` ran in the current folder, writing the run's files among the user's."""
    line = config_error(neurorun("debug=default", *args, cwd=tmp_path))
    assert f"{args[-1].split('=')[0]}= names no folder" in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("args", "said"), [
    (['hydra.run.dir="~/runs/a"'], "hydra.run.dir='~/runs/a' starts with '~', which the "
     "shell does not expand inside a quoted override: it would be a folder named '~' in the "
     "current one. Fix: hydra.run.dir=HOME/runs/a"),
    (["-m", "seed=0,1", 'hydra.sweep.dir="~"'], "hydra.sweep.dir='~' starts with '~', which "
     "the shell does not expand inside a quoted override: it would be a folder named '~' in "
     "the current one. Fix: hydra.sweep.dir=HOME"),
    (['resume="~nosuchuser0/r"'], "resume='~nosuchuser0/r' starts with '~', which the shell "
     "does not expand inside a quoted override: it would be a folder named '~nosuchuser0' in "
     "the current one. Fix: resume=<the folder's full path>"),
])
def test_a_folder_that_starts_with_a_tilde_is_refused(tmp_path, args, said):
    """A quoted `hydra.run.dir="~/runs/a"` (Hydra reads `~` only in quotes, and the shell
    then leaves it) made a folder named `~` in the current one."""
    line = config_error(neurorun("debug=default", *args, cwd=tmp_path))
    assert line == f"neurorun: config error: {said.replace('HOME', str(Path.home()))}"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("run_dir", "said"), [(".", "the current folder"),
                                               ("..", "a folder that holds the current one")])
def test_a_new_run_in_the_current_folder_is_refused(tmp_path, run_dir, said):
    """`hydra.run.dir=.` wrote the run's metrics, checkpoints, .hydra/ and log among the
    user's files, where the empty `hydra.run.dir=` (refused above) was refused for that."""
    here = tmp_path / "sub"
    here.mkdir()
    (here / "notes.txt").write_text("the user's")
    line = config_error(neurorun("debug=default", f"hydra.run.dir={run_dir}", cwd=here))
    assert f"hydra.run.dir={run_dir!r} is {said}: the run's files would go among yours" in line
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == [
        "sub", "sub/notes.txt"]


def test_a_new_run_in_a_folder_of_other_files_runs(tmp_path):
    """A scheduler's log put there first (SLURM's --output) stays, beside the run's files."""
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "slurm-1.out").write_text("the scheduler's")
    result = neurorun("debug=default", "hydra.run.dir=run", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "run" / "checkpoints" / "state.pt").is_file()
    assert (tmp_path / "run" / "slurm-1.out").read_text() == "the scheduler's"


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


def contents(folder: Path) -> dict[str, bytes]:
    """Every file of ``folder`` but its lock (which names the last process that held it)."""
    return {str(path.relative_to(folder)): path.read_bytes() for path in folder.rglob("*")
            if path.is_file() and path.name != LOCK_FILE}


def test_a_sweeps_job_refused_in_a_runs_folder_leaves_its_files_as_they_were(run_copy,
                                                                            tmp_path):
    """Hydra saved the job's config, overrides and hydra.yaml over the run's own .hydra/ (and
    appended to its log) before the job was refused: a later resume ran the job's config."""
    before = contents(run_copy)
    result = neurorun("-m", "debug=default", "generations=3,4", "algo.popsize=6",
                      f"hydra.sweep.dir={tmp_path / 'sweep'}", "hydra.sweep.subdir=../run",
                      cwd=tmp_path)
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stderr.count("run' already holds a run") == 4  # 2 jobs, twice
    assert contents(run_copy) == before


def test_a_sweep_into_a_folder_holding_a_run_is_refused_before_it_starts(run_copy, tmp_path):
    before = contents(run_copy)
    line = config_error(neurorun("-m", "debug=default", "generations=3,4",
                                 f"hydra.sweep.dir={tmp_path}", cwd=tmp_path))
    assert f"hydra.sweep.dir={str(tmp_path)!r} already holds a run (run/); " in line
    assert contents(run_copy) == before


@pytest.mark.parametrize("args", [
    ["resume={run}", "seed=5"],
    ["-m", "hydra.sweep.dir={tmp}/sweep", "hydra.sweep.subdir=../run"]])
def test_a_given_output_subdir_is_refused_for_a_resume_or_a_sweep(run_copy, tmp_path, args):
    """`resume=<run> hydra.output_subdir=.hydra` saved the default config over the run's own
    before the resume was refused (seed=5): the run's config then held seed 5 and algo=pgpe's
    defaults."""
    before = contents(run_copy)
    args = [arg.format(run=run_copy, tmp=tmp_path) for arg in args]
    line = config_error(neurorun(*args, "hydra.output_subdir=.hydra", cwd=tmp_path))
    assert "hydra.output_subdir='.hydra' with" in line
    assert contents(run_copy) == before


@pytest.mark.parametrize("kept", ["best.pt", "last.json"])
def test_a_run_folder_with_policies_but_no_state_is_not_resumed(tmp_path, kept):
    """A folder whose run checkpointed (its policies and state.pt are written together) but
    lost state.pt was resumed from generation 0, cutting its metrics and replacing its
    policies."""
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / kept).write_bytes(b"weights")
    with pytest.raises(ValueError, match=rf"checkpoint's policies \({kept}\) but not state.pt"):
        RunFolder(tmp_path, resume=True)
    assert sorted(p.name for p in tmp_path.rglob("*")) == sorted(
        ["checkpoints", kept, LOCK_FILE])


def test_resuming_a_run_that_lost_its_state_changes_nothing(run_copy, tmp_path):
    (run_copy / "checkpoints" / "state.pt").unlink()
    before = contents(run_copy)
    line = config_error(neurorun(f"resume={run_copy}", "generations=3", cwd=tmp_path))
    assert "but not state.pt" in line and "start a new run in another folder" in line
    assert contents(run_copy) == before


def test_a_resumes_overrides_are_checked_against_the_runs_own_config(tmp_path):
    """`resume=<a CEM run> algo.parenthood_ratio=0.4` was refused (algo=pgpe, the packaged
    default, has no such option), and an option of pgpe's reached the run's config check."""
    run_dir = tmp_path / "cem"
    started = neurorun("debug=default", "algo=cem", "algo.popsize=6",
                       f"hydra.run.dir={run_dir}", cwd=tmp_path)
    assert started.returncode == 0, started.stderr[-3000:]
    pgpe_only = config_error(neurorun(f"resume={run_dir}", "algo.symmetric=false",
                                      cwd=tmp_path))
    assert "the saved config has no key 'algo.symmetric'" in pgpe_only
    resumed = neurorun(f"resume={run_dir}", "generations=3", "algo.parenthood_ratio=0.4",
                       cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    (record,) = (run_dir / ".hydra").glob("resumed_*")
    config = OmegaConf.load(record / "config.yaml")
    assert (config.algo.name, config.algo.parenthood_ratio, config.generations) == ("cem", 0.4, 3)
    assert OmegaConf.load(record / "overrides.yaml") == [
        f"resume={run_dir}", "generations=3", "algo.parenthood_ratio=0.4"]
