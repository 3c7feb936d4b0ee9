"""A run folder under faults: FIFOs and other non-regular files where a run opens a
file, a run that never checkpointed, two commands on one folder, two sweeps in one second,
Hydra keys that would write outside the run folder, and the printed resume command."""

from __future__ import annotations

import csv
import datetime
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import OmegaConf

from neurorun.record.claims import new_folder
from neurorun.record.layout import resume_command
from tests.cli.test_signals import NEURORUN, RUN, data_rows

BIN = Path(sys.executable).parent  # the venv's console scripts: neurorun, neurorun-eval
TIMEOUT = 120  # a run that hangs fails the test instead of hanging it


def neurorun(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*NEURORUN, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=TIMEOUT)


def config_error(result: subprocess.CompletedProcess) -> str:
    """The one line of a refused command (exit status 2, no traceback)."""
    assert result.returncode == 2, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    (line,) = [line for line in result.stderr.splitlines()
               if line.startswith("neurorun: config error: ")]
    return line


def generations(run_dir: Path) -> tuple[list[int], list[int]]:
    """The generation column of metrics.csv and of metrics.jsonl."""
    with open(run_dir / "metrics.csv", newline="") as file:
        rows = [int(row["generation"]) for row in csv.DictReader(file)]
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return rows, [json.loads(line)["generation"] for line in lines]


# ----- FIFOs, sockets, devices where a run opens a file -----
@pytest.mark.parametrize("name, expected", [("neurorun.log", "a regular file"),
                                            (".hydra", "a folder")])
def test_a_fifo_in_a_new_runs_folder_is_refused_instead_of_blocking(tmp_path, name, expected):
    """Hydra's log handler opened a FIFO neurorun.log in its set-up, before any neurorun
    code, with signals deferred: the run blocked for good."""
    run_dir = tmp_path / "d"
    run_dir.mkdir()
    os.mkfifo(run_dir / name)
    line = config_error(neurorun("debug=default", f"hydra.run.dir={run_dir}", cwd=tmp_path))
    assert f"a FIFO at {name}, where a run or the tools open {expected}" in line
    assert [p.name for p in run_dir.iterdir()] == [name]  # nothing written


# Hydra's log of a custom hydra.job.name, and its saved configs in a custom
# hydra.output_subdir, were not checked: a FIFO there blocked the run for good in open()
@pytest.mark.parametrize(("override", "name", "expected"), [
    ("hydra.job.name=foo", "foo.log", "a regular file"),
    ("hydra.output_subdir=sub", "sub/config.yaml", "a regular file"),
    ("hydra.output_subdir=sub", "sub", "a folder")])
def test_a_fifo_at_a_file_named_by_hydra_keys_is_refused(tmp_path, override, name, expected):
    run_dir = tmp_path / "d"
    (run_dir / name).parent.mkdir(parents=True)
    os.mkfifo(run_dir / name)
    line = config_error(neurorun("debug=default", override, f"hydra.run.dir={run_dir}",
                                 cwd=tmp_path))
    assert f"a FIFO at {name}, where a run or the tools open {expected}" in line
    assert not (run_dir / ".neurorun.lock").exists()  # refused before anything is opened


# the names Hydra's keys give its files were checked for FIFOs but
# not for links (Hydra appended its log through a link out of the folder), and a folder
# holding them was not seen as unstarted (a run refused in it left its folder behind)
@pytest.mark.parametrize(("override", "name"), [("hydra.job.name=foo", "foo.log"),
                                                ("hydra.output_subdir=sub", "sub")])
def test_a_link_at_a_file_named_by_hydra_keys_is_refused(tmp_path, override, name):
    run_dir, outside = tmp_path / "d", tmp_path / "outside"
    run_dir.mkdir()
    outside.mkdir() if name == "sub" else outside.write_text("someone else's\n")
    (run_dir / name).symlink_to(outside)
    line = config_error(neurorun("debug=default", override, f"hydra.run.dir={run_dir}",
                                 cwd=tmp_path))
    assert f"symbolic links where a run writes ({name} -> {outside})" in line
    assert [p.name for p in run_dir.iterdir()] == [name]  # nothing written
    assert (list(outside.iterdir()) == [] if name == "sub"
            else outside.read_text() == "someone else's\n")


@pytest.mark.parametrize("override", ["hydra.job.name=foo", "hydra.output_subdir=sub"])
def test_a_run_refused_before_it_began_leaves_no_folder_whatever_hydras_names(tmp_path,
                                                                             override):
    line = config_error(neurorun("debug=default", override, "algo.popsize=-1",
                                 "hydra.run.dir=run", cwd=tmp_path))
    assert "algo.popsize=-1" in line
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("name", ["neurorun.log", ".neurorun.lock", "metrics.csv",
                                  ".hydra/config.yaml", "checkpoints/state.pt"])
def test_a_fifo_in_a_resumed_run_is_refused(run_copy, tmp_path, name):
    """A resumed run's log blocked as a new run's did; a FIFO lock file ended as 'the run
    failed: OSError: [Errno 22]'."""
    (run_copy / name).unlink()
    os.mkfifo(run_copy / name)
    line = config_error(neurorun(f"resume={run_copy}", "generations=3", cwd=tmp_path))
    assert f"a FIFO at {name}" in line
    if name != "metrics.csv":
        assert generations(run_copy) == ([1, 2], [1, 2])  # nothing run, nothing cut


def test_a_unix_socket_as_the_lock_file_is_refused(run_copy, tmp_path):
    import socket

    (run_copy / ".neurorun.lock").unlink()
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(run_copy / ".neurorun.lock"))
        line = config_error(neurorun(f"resume={run_copy}", "generations=3", cwd=tmp_path))
    assert "a socket at .neurorun.lock" in line


def test_the_saved_config_reader_refuses_a_fifo_without_blocking(tmp_path):
    """`neurorun-eval <run>` read a FIFO .hydra/config.yaml (its center evaluation's settings)
    and hung; the reader is saved_yaml.read_config. In a subprocess: a hang fails here."""
    os.mkfifo(tmp_path / "config.yaml")
    code = ("from neurorun.config.saved_yaml import SavedFileError, read_config\n"
            "try:\n    read_config('config.yaml')\n"
            "except SavedFileError as error:\n    print(error)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "'config.yaml' is a FIFO, not a regular file" in done.stdout


def test_neurorun_eval_of_a_run_with_a_fifo_config_ends(run_copy, tmp_path):
    (run_copy / ".hydra" / "config.yaml").unlink()
    os.mkfifo(run_copy / ".hydra" / "config.yaml")
    done = subprocess.run([str(BIN / "neurorun-eval"), str(run_copy), "--json"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert "Traceback" not in done.stderr, done.stderr[-3000:]


# ----- a run that never checkpointed -----
def test_a_run_that_never_checkpointed_resumes_from_generation_0(run_copy, tmp_path):
    """What SIGKILL before the first periodic checkpoint (or a full disk at the first one)
    leaves: a saved config and metric rows, no checkpoints/. resume= said there was nothing
    to resume and to start again; starting again said the folder already held a run."""
    shutil.rmtree(run_copy / "checkpoints")
    again = config_error(neurorun(f"hydra.run.dir={run_copy}", cwd=tmp_path))
    assert "already holds a run" in again
    command = re.search(r"`(neurorun resume=[^`]*)`", again)[1]  # the fix it gives
    assert command == f"neurorun resume={run_copy}"
    resumed = neurorun(f"resume={run_copy}", "generations=3", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "starts again from generation 0" in resumed.stderr
    assert generations(run_copy) == ([1, 2, 3], [1, 2, 3])  # the lost rows replaced, not kept
    assert (run_copy / "checkpoints" / "state.pt").is_file()


def _fake_slurm(tmp_path: Path) -> dict[str, str]:
    """A submit folder whose .venv/bin/activate puts this venv on PATH, and `srun` (runs its
    command) and `scontrol` (records its arguments) on PATH, as on a SLURM node."""
    fake = tmp_path / "fake_bin"
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "activate").write_text(f'export PATH="{BIN}:$PATH"\n')
    fake.mkdir()
    (fake / "srun").write_text('#!/bin/sh\nexec "$@"\n')
    (fake / "scontrol").write_text(f'#!/bin/sh\necho "$@" >> "{tmp_path}/scontrol.log"\n')
    for script in fake.iterdir():
        script.chmod(0o755)
    return {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}",
            "SLURM_SUBMIT_DIR": str(tmp_path), "SLURM_ARRAY_JOB_ID": "77",
            "SLURM_ARRAY_TASK_ID": "0", "SLURM_JOB_ID": "78"}


def test_the_slurm_example_resumes_a_task_killed_before_its_first_checkpoint(tmp_path):
    """A requeued task whose first start was killed before checkpoint_every: the script saw
    no state.pt and started a new run into the folder, which was refused (exit 2) on every
    requeue."""
    script = Path(__file__).resolve().parents[2] / "examples" / "slurm_sbatch.sh"
    env = _fake_slurm(tmp_path)
    run_dir = tmp_path / "runs" / "slurm" / "77_0"
    overrides = [*RUN[len(NEURORUN):], "problem.episode_length=200", "generations=40"]
    first = subprocess.Popen(["bash", str(script), *overrides], cwd=tmp_path, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    deadline = time.monotonic() + TIMEOUT
    while data_rows(run_dir) < 2 and time.monotonic() < deadline and first.poll() is None:
        time.sleep(0.02)
    os.killpg(first.pid, signal.SIGKILL)  # the node went away: no handler runs
    first.communicate(timeout=60)
    assert data_rows(run_dir) >= 2 and not (run_dir / "checkpoints" / "state.pt").exists()
    requeued = subprocess.run(["bash", str(script)], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=TIMEOUT)
    assert requeued.returncode == 0, requeued.stderr[-3000:]
    assert generations(run_dir) == (list(range(1, 41)), list(range(1, 41)))
    assert not (tmp_path / "scontrol.log").exists()  # requeued only after SIGUSR1 (138)


# ----- nothing is written into a folder before its lock is held -----
def test_a_refused_concurrent_resume_writes_nothing(run_copy, tmp_path):
    """Two resumes of one folder at once: the one refused as 'in use' had passed the check
    before the other took the lock, and Hydra wrote its overrides and config there."""
    args = {"A": ["generations=100000", "checkpoint_every=1"], "B": ["generations=90",
                                                                     "checkpoint_every=2"]}
    processes = {name: subprocess.Popen(
        [*NEURORUN, f"resume={run_copy}", *given], cwd=tmp_path, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True) for name, given in args.items()}
    try:
        deadline = time.monotonic() + TIMEOUT
        while all(p.poll() is None for p in processes.values()) and time.monotonic() < deadline:
            time.sleep(0.05)
        (loser,) = [name for name, p in processes.items() if p.poll() is not None]
        err = processes[loser].communicate(timeout=60)[1]
        assert processes[loser].returncode == 2 and "is in use by neurorun pid" in err, err
        winner = next(name for name in processes if name != loser)
        while data_rows(run_copy) < 4 and time.monotonic() < deadline:  # the winner runs
            time.sleep(0.05)
    finally:
        for p in processes.values():
            if p.returncode is None:
                p.send_signal(signal.SIGINT)
                p.communicate(timeout=60)
    saved = OmegaConf.load(run_copy / ".hydra" / "config.yaml")
    assert [f"generations={saved.generations}", f"checkpoint_every={saved.checkpoint_every}"] \
        == args[winner]
    (record,) = (run_copy / ".hydra").glob("resumed_*")  # the winner's record only
    assert OmegaConf.to_container(OmegaConf.load(record / "overrides.yaml")) == \
        [f"resume={run_copy}", *args[winner]]


def test_a_refused_resume_leaves_no_record(run_copy, tmp_path):
    """A resume refused (here: another seed) left .hydra/resumed_<date>/ with Hydra's files; a
    SIGTERM in its first second an empty one. Its record is written when its run starts."""
    before = sorted(p.relative_to(run_copy) for p in run_copy.rglob("*"))
    line = config_error(neurorun(f"resume={run_copy}", "seed=5", cwd=tmp_path))
    assert "seed=5" in line
    assert sorted(p.relative_to(run_copy) for p in run_copy.rglob("*")) == before


# ----- a sweep's folder, and a run's, is its own -----
def test_a_sweep_never_writes_into_another_sweeps_folder(tmp_path):
    """Two sweeps started in the same second shared runs/multirun/<second>/: each lost a job
    ('in use') and multirun.yaml recorded one. Here every name of the next two minutes is
    taken by an earlier sweep."""
    now = datetime.datetime.now()
    taken = [tmp_path / "runs" / "multirun" / (now + datetime.timedelta(seconds=s)).strftime(
        "%Y-%m-%d_%H-%M-%S") for s in range(120)]
    for folder in taken:
        folder.mkdir(parents=True)
        (folder / "multirun.yaml").write_text("earlier sweep\n")
    result = neurorun("-m", "debug=default", "generations=1", "seed=0", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert all((f / "multirun.yaml").read_text() == "earlier sweep\n" and
               sorted(p.name for p in f.iterdir()) == ["multirun.yaml"] for f in taken)
    (sweep,) = set((tmp_path / "runs" / "multirun").iterdir()) - set(taken)
    assert sweep.name.endswith("_2") and sweep.name.removesuffix("_2") in {f.name for f in taken}
    assert (sweep / "multirun.yaml").is_file() and (sweep / "0_CartPole-v1_pgpe_s0").is_dir()


def test_a_new_folder_is_never_one_that_exists(tmp_path):
    """The claim is one os.mkdir: a name another process made first is skipped."""
    base = tmp_path / "runs" / "x" / "2026-01-01_00-00-00_s0"
    first, second = new_folder(base), new_folder(base)
    base.with_name(base.name + "_4").mkdir()  # another process's, made meanwhile
    third, fourth = new_folder(base), new_folder(base)
    assert [first, second, third, fourth] == [str(base), f"{base}_2", f"{base}_3", f"{base}_5"]


def test_every_job_of_a_sweep_names_the_claimed_folder(tmp_path, monkeypatch):
    """A launcher may run jobs in other processes, which claimed nothing: the folder comes
    with the config's cache, which Hydra copies into each job's config."""
    from neurorun.cli.app import compose_config
    from neurorun.record import claims

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(claims, "_claimed", {})
    monkeypatch.setattr(claims, "_made", [])
    master = compose_config(["seed=0"], hydra_config=True)
    with claims.claiming():
        folder = master.hydra.sweep.dir
    monkeypatch.setattr(claims, "_claimed", {})  # as in another process
    job = compose_config(["seed=1"], hydra_config=True)
    OmegaConf.copy_cache(from_config=master, to_config=job)  # what Hydra's launchers do
    assert job.hydra.sweep.dir == folder and (tmp_path / folder).is_dir()
    assert [p.name for p in (tmp_path / "runs" / "multirun").iterdir()] == [Path(folder).name]


# ----- Hydra keys that name files -----
@pytest.mark.parametrize("override, outside", [
    ("hydra.job.name=../../x", "x.log"), ("hydra.job.name=/tmp/../x", "x.log"),
    ("hydra.output_subdir=../../x", "x"), ("hydra.output_subdir=/tmp", None)])
def test_hydra_keys_that_would_write_outside_the_run_folder_are_refused(tmp_path, override,
                                                                         outside):
    run_dir = tmp_path / "a" / "b" / "run"
    line = config_error(neurorun("debug=default", f"hydra.run.dir={run_dir}", override,
                                 cwd=tmp_path))
    assert override.split("=")[0] in line
    assert not run_dir.exists() and not (tmp_path / "a").exists()
    assert outside is None or not (tmp_path / outside).exists()


# ----- the printed resume command -----
@pytest.mark.parametrize("path", ["runs/a/b", "runs/ünï cødé/r2", "it's \"q\"", "a\\",
                                  "a\\\"b c", "x${y}z", "a,b=c"])
def test_the_resume_command_reads_back_as_the_path(path):
    """What the shell passes on is an override whose value, as Hydra and OmegaConf read it,
    is the path."""
    import shlex

    program, override = shlex.split(resume_command(path))
    parsed = OverridesParser.create().parse_override(override)
    assert (program, parsed.key_or_group) == ("neurorun", "resume")
    assert OmegaConf.create({"resume": parsed.value()}).resume == path


def test_the_printed_resume_command_runs_from_a_shell(tmp_path):
    """`neurorun resume='runs/ünï cødé/r2'` was printed, which Hydra cannot parse."""
    home = tmp_path / "it's \"ünï cødé\" $HOME \\x"
    home.mkdir()
    process = subprocess.Popen([*RUN, "generations=100000", "hydra.run.dir=r 2"], cwd=home,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + TIMEOUT
    while data_rows(home / "r 2") < 2 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    err = process.communicate(timeout=60)[1]
    assert process.returncode == 128 + signal.SIGTERM, err[-3000:]
    command = re.search(r"continue it with `(.+)`", err)[1]
    done = torch.load(home / "r 2" / "checkpoints" / "state.pt", weights_only=True)["generation"]
    resumed = subprocess.run(["bash", "-c", f"{command} generations={done + 2}"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=TIMEOUT,
                             env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"})
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert generations(home / "r 2")[0] == list(range(1, done + 3))


# ----- smaller cases -----
@pytest.mark.parametrize("key, value", [("env.id", "A" * 300 + "-v0"), ("algo.name", "a" * 300),
                                        ("seed", "9" * 300)])
def test_a_very_long_name_part_is_one_line_and_leaves_no_folder(tmp_path, key, value):
    """The run folder is named after them: 'File name too long' was a traceback; now the
    value's own check says what is wrong with it."""
    line = config_error(neurorun("debug=default", f"{key}={value}", cwd=tmp_path))
    assert line.startswith(f"neurorun: config error: {key}={value[:1]}") or \
        line.startswith(f"neurorun: config error: {key}='{value[:1]}")
    assert list(tmp_path.iterdir()) == []


def test_a_refused_run_leaves_only_the_folders_that_were_there(tmp_path):
    """Every config error left the empty parents of its run folder (runs/Bogus-v0/pgpe/)."""
    (tmp_path / "runs" / "kept").mkdir(parents=True)
    line = config_error(neurorun("debug=default", "env=Bogus-v0", cwd=tmp_path))
    assert "Bogus-v0" in line
    assert [p.relative_to(tmp_path) for p in tmp_path.rglob("*")] == [Path("runs"),
                                                                       Path("runs/kept")]


@pytest.mark.parametrize("sweep", [[], ["-m"]])
def test_a_folder_that_cannot_be_made_is_one_line(tmp_path, sweep):
    """A file named `runs` where the new run's (or sweep's) folder goes: Hydra's mkdir raised
    NotADirectoryError as a traceback."""
    (tmp_path / "runs").write_text("")
    line = config_error(neurorun(*sweep, "debug=default", cwd=tmp_path))
    assert "cannot be made here (Not a directory: runs/" in line
    assert [p.name for p in tmp_path.iterdir()] == ["runs"]


def test_an_empty_resume_is_refused(tmp_path):
    """`resume=` started a new run."""
    line = config_error(neurorun("debug=default", "resume=", cwd=tmp_path))
    assert "resume= names no folder" in line and list(tmp_path.iterdir()) == []


def test_resume_with_another_run_dir_is_refused(run_copy, tmp_path):
    """`resume=X hydra.run.dir=Y` resumed into Y, and named Y in what it printed."""
    line = config_error(neurorun(f"resume={run_copy}", f"hydra.run.dir={tmp_path / 'y'}",
                                 "generations=3", cwd=tmp_path))
    assert "names another" in line and not (tmp_path / "y").exists()
    assert generations(run_copy)[0] == [1, 2]
