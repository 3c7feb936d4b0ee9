"""Checkpoint files, atomic writes, resume state and exact resume."""

import csv
import json
import os
import pickle
import re
import signal
from types import SimpleNamespace

import pytest
import torch
from omegaconf import OmegaConf

from neurorun.cli.app import compose_config
from neurorun.common import atomic
from neurorun.common.errors import ConfigError
from neurorun.config import resume
from neurorun.loop.runner import run
from neurorun.record import layout, run_folder
from tests.record.crafted import craft_state, set_key

TIME_COLUMNS = ("elapsed_s", "steps_per_s")


def tiny(*overrides):
    return compose_config(["debug=default", "logger.console.quiet=true", *overrides])


def metric_rows(run_dir):
    with open(run_dir / "metrics.csv", newline="") as file:
        return [{k: v for k, v in row.items() if k not in TIME_COLUMNS}
                for row in csv.DictReader(file)]


def jsonl_rows(run_dir):
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [{k: v for k, v in json.loads(line).items() if k not in TIME_COLUMNS}
            for line in lines]


def last_solution(run_dir):
    with open(run_dir / "checkpoints" / "last.pkl", "rb") as file:
        return pickle.load(file)["solution"]


def save_run_config(cfg, run_dir):
    """What Hydra does for the command: the composed config in <run>/.hydra/config.yaml."""
    path = layout.saved_config_path(run_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    OmegaConf.save(cfg, path)


def test_atomic_write_survives_a_crash_before_the_rename(tmp_path, monkeypatch):
    target = tmp_path / "state.pt"
    atomic.atomic_write(target, atomic.torch_file({"generation": 3}))

    def crash(src, dst):
        raise OSError("simulated crash between the temporary write and the rename")

    monkeypatch.setattr(atomic.os, "replace", crash)
    with pytest.raises(OSError, match="simulated crash"):
        atomic.atomic_write(target, atomic.torch_file({"generation": 4}))
    assert torch.load(target, weights_only=True) == {"generation": 3}
    assert os.listdir(tmp_path) == ["state.pt"]  # the temporary file is gone too


def test_a_crash_mid_checkpoint_leaves_the_previous_checkpoint_whole(tmp_path, monkeypatch):
    cfg = tiny("generations=2")
    run(cfg, run_dir=tmp_path)
    before = last_solution(tmp_path).clone()
    state_before = (tmp_path / "checkpoints" / "state.pt").read_bytes()
    monkeypatch.setattr(atomic.os, "replace", lambda src, dst: (_ for _ in ()).throw(
        OSError("simulated crash")))
    save_run_config(cfg, tmp_path)
    with pytest.raises(OSError, match="simulated crash"):
        run(resume.load_run_config(tmp_path, ["generations=3"]), run_dir=tmp_path)
    assert torch.equal(last_solution(tmp_path), before)
    assert (tmp_path / "checkpoints" / "state.pt").read_bytes() == state_before
    assert not [p for p in (tmp_path / "checkpoints").iterdir() if p.suffix == ".tmp"]


def test_checkpoint_files_and_the_weights_only_twin(tmp_path):
    run(tiny("generations=2", "env.backend=gymnasium"), run_dir=tmp_path)
    folder = tmp_path / "checkpoints"
    assert {p.name for p in folder.iterdir()} == {
        f"{stem}.{ext}" for stem in ("last", "best") for ext in ("pkl", "pt", "json")
    } | {"state.pt"}
    with open(folder / "last.pkl", "rb") as file:
        pickled = pickle.load(file)
    weights = torch.load(folder / "last.pt", weights_only=True)
    assert torch.equal(weights["solution"], pickled["solution"])
    assert {"policy", "interaction_count", "episode_count", "env", "architecture"} <= set(pickled)
    meta = json.loads((folder / "last.json").read_text())
    assert meta["env"] == "CartPole-v1" and meta["architecture"] == "Linear(obs_length, act_length)"
    assert (meta["obs_length"], meta["act_length"], meta["solution_length"]) == (4, 2, 4 * 2 + 2)


def test_obs_stats_are_in_the_weights_only_twin(tmp_path):
    run(tiny("generations=1", "problem.observation_normalization=true"), run_dir=tmp_path)
    weights = torch.load(tmp_path / "checkpoints" / "last.pt", weights_only=True)
    meta = json.loads((tmp_path / "checkpoints" / "last.json").read_text())
    with open(tmp_path / "checkpoints" / "last.pkl", "rb") as file:
        pickled = pickle.load(file)
    for key in ("obs_mean", "obs_stdev", "obs_sum", "obs_sum_of_squares"):
        assert torch.equal(weights[key], pickled[key])
    assert meta["obs_stdev"] == pytest.approx(pickled["obs_stdev"].tolist())
    steps = json.loads((tmp_path / "metrics.jsonl").read_text())["total_interaction_count"]
    assert meta["obs_count"] == steps  # every training observation was counted once


@pytest.mark.parametrize("extra", [[], ["problem.observation_normalization=true",
                                        "eval_every=2", "algo=snes"]])
def test_three_plus_three_generations_equal_six(tmp_path, extra):
    whole, split = tmp_path / "whole", tmp_path / "split"
    run(tiny("generations=6", "target_score=null", *extra), run_dir=whole)
    cfg = tiny("generations=3", "target_score=null", *extra)
    run(cfg, run_dir=split)
    save_run_config(cfg, split)
    resumed = run(resume.load_run_config(split, ["generations=6"]), run_dir=split)
    assert resumed["generation"] == 6
    assert metric_rows(split) == metric_rows(whole)
    assert jsonl_rows(split) == jsonl_rows(whole)
    assert torch.equal(last_solution(split), last_solution(whole))


def test_resume_drops_rows_written_after_the_checkpoint(tmp_path):
    whole, split = tmp_path / "whole", tmp_path / "split"
    run(tiny("generations=5", "target_score=null"), run_dir=whole)
    cfg = tiny("generations=4", "target_score=null", "checkpoint_every=2")
    run(cfg, run_dir=split)
    save_run_config(cfg, split)
    state = torch.load(split / "checkpoints" / "state.pt", weights_only=False)
    assert state["generation"] == 4
    with open(split / "metrics.csv", "a") as file:  # a crash after generation 5 was logged
        file.write("5,junk\n")
    with open(split / "metrics.jsonl", "a") as file:
        file.write('{"generation": 5}\n')
    run(resume.load_run_config(split, ["generations=5"]), run_dir=split)
    assert metric_rows(split) == metric_rows(whole)
    assert jsonl_rows(split) == jsonl_rows(whole)


def test_load_run_config_applies_overrides_on_the_saved_config(tmp_path):
    save_run_config(tiny(), tmp_path)
    cfg = resume.load_run_config(tmp_path, ["generations=9", "algo.popsize=12",
                                                "+algo.extra=1", f"resume={tmp_path}"])
    assert (cfg.generations, cfg.algo.popsize, cfg.algo.extra) == (9, 12, 1)
    assert cfg.resume == str(tmp_path) and cfg.algo.name == "pgpe"
    with pytest.raises(ValueError, match="picks a config group"):
        resume.load_run_config(tmp_path, ["algo=snes"])
    # groups the saved config holds no section of: "no key 'experiment'", whose fix failed
    for group in ("experiment=cartpole", "debug=default", "+debug=default"):
        with pytest.raises(ValueError, match=r"picks a config group.*e\.g\. algo\.popsize="):
            resume.load_run_config(tmp_path, [group])
    assert resume.load_run_config(tmp_path, ["debug=null", "hparams_search=null"]) == \
        resume.load_run_config(tmp_path, [])  # none picked, as in the run
    # a start setting no restart reads again was kept and never used (a run without a
    # checkpoint starts again, and reads it)
    assert resume.load_run_config(tmp_path, ["algo.radius_init=5.0"]).algo.radius_init == 5.0
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "state.pt").write_bytes(b"")
    for start in ("algo.radius_init=5.0", "problem.initial_bounds=[-5,5]"):
        with pytest.raises(ValueError, match=rf"^resume: {re.escape(start.split('=')[0])}=.*"
                                             r"restart.patience=null"):
            resume.load_run_config(tmp_path, [start])
    cfg = resume.load_run_config(tmp_path, ["algo.radius_init=5.0", "restart.patience=3"])
    assert (cfg.algo.radius_init, cfg.restart.patience) == (5.0, 3)  # the next restart reads it
    with pytest.raises(ValueError, match="no key 'algo.popsiz'"):
        resume.load_run_config(tmp_path, ["algo.popsiz=3"])
    with pytest.raises(FileNotFoundError, match="no saved config"):
        resume.load_run_config(tmp_path / "nothing", [])


def test_a_failing_generation_leaves_a_checkpoint_that_resumes_exactly(tmp_path, monkeypatch):
    """An error (or Ctrl-C) in generation 4 saves the state after generation 3."""
    from neurorun.problems.problem import Problem

    whole, failed = tmp_path / "whole", tmp_path / "failed"
    run(tiny("generations=5", "target_score=null", "checkpoint_every=0"), run_dir=whole)
    cfg = tiny("generations=5", "target_score=null", "checkpoint_every=0")
    save_run_config(cfg, failed)
    evaluate, calls = Problem.evaluate, []

    def fail_fourth(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return evaluate(self, *args, **kwargs)

    monkeypatch.setattr(Problem, "evaluate", fail_fourth)
    with pytest.raises(KeyboardInterrupt):
        run(cfg, run_dir=failed)
    monkeypatch.setattr(Problem, "evaluate", evaluate)
    state = torch.load(failed / "checkpoints" / "state.pt", weights_only=False)
    assert state["generation"] == 3
    run(resume.load_run_config(failed, []), run_dir=failed)
    assert metric_rows(failed) == metric_rows(whole)
    assert torch.equal(last_solution(failed), last_solution(whole))


@pytest.mark.parametrize("when", ["while its row is written", "after its row is written"])
def test_a_signal_as_a_generation_is_logged_saves_that_generation(tmp_path, monkeypatch, when):
    """CI caught a SIGTERM landing after generation 3's row was written but before the next
    generation began: the state saved was generation 2's. Whether the signal comes while the
    loggers write generation 3 (it waits for the row and the snapshot) or after (in a
    callback), the state after generation 3 is saved, and the run resumes exactly."""
    from neurorun.loggers.base import LoggerGroup
    from neurorun.loop.callbacks import Callbacks
    from neurorun.loop.signals import RunInterrupted

    def terminate(generation):
        if generation == 3:
            os.kill(os.getpid(), signal.SIGTERM)

    class Terminate(Callbacks):
        def on_generation_end(self, runner, generation, status):
            terminate(generation)

    whole, stopped = tmp_path / "whole", tmp_path / "stopped"
    run(tiny("generations=5", "target_score=null", "checkpoint_every=0"), run_dir=whole)
    cfg = tiny("generations=5", "target_score=null", "checkpoint_every=0")
    save_run_config(cfg, stopped)
    if when == "while its row is written":
        log = LoggerGroup.log

        def log_then_terminate(self, generation, status):
            terminate(generation)  # before the row is written: it must still be written
            log(self, generation, status)

        monkeypatch.setattr(LoggerGroup, "log", log_then_terminate)
    with pytest.raises(RunInterrupted):
        run(cfg, run_dir=stopped, callbacks=Terminate() if when.startswith("after") else None)
    monkeypatch.undo()
    state = torch.load(stopped / "checkpoints" / "state.pt", weights_only=False)
    assert state["generation"] == 3 and len(metric_rows(stopped)) == 3
    run(resume.load_run_config(stopped, []), run_dir=stopped)
    assert metric_rows(stopped) == metric_rows(whole)
    assert torch.equal(last_solution(stopped), last_solution(whole))


@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_a_damaged_state_pt_is_one_line(tmp_path, damage):
    run(tiny("generations=1"), run_dir=tmp_path)
    path = tmp_path / "checkpoints" / "state.pt"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2] if damage == "truncate" else b"not a torch file")
    with pytest.raises(ConfigError, match=r"state.pt cannot be loaded as plain data") as info:
        run(resume.load_run_config(tmp_path, ["generations=2"]), run_dir=tmp_path)
    assert "\n" not in str(info.value)


def test_temporary_files_of_a_killed_write_are_removed_on_resume(tmp_path):
    run(tiny("generations=1"), run_dir=tmp_path)
    folder = tmp_path / "checkpoints"
    leftovers = [folder / ".state.pt.x1y2.tmp", folder / ".best.pkl.a9.tmp"]
    for path in leftovers:
        path.write_bytes(b"half a file")
    run(resume.load_run_config(tmp_path, ["generations=2"]), run_dir=tmp_path)
    assert not any(path.exists() for path in leftovers)
    assert (folder / "state.pt").is_file()


def test_resume_refuses_another_seed(tmp_path):
    run(tiny("generations=1", "seed=3"), run_dir=tmp_path)
    with pytest.raises(ValueError, match="seed=4 but the run was started with seed=3"):
        resume.load_run_config(tmp_path, ["seed=4"])
    assert resume.load_run_config(tmp_path, ["seed=3"]).seed == 3  # the same seed is fine


@pytest.mark.parametrize("override", [
    "network.spec='Linear(obs_length, 8) >> Tanh() >> Linear(8, act_length)'",
    "env.id=Acrobot-v1",
    "algo.name=snes",  # it named algo.symmetric, pgpe's option, as a key snes lacks
    "algo.optimizer=adam",  # it called state.pt changed: ClipUp's state is no Adam's
    "problem.observation_min_variance=0",  # its policies were scored with the 0.01 floor
    # what center_eval measures: best.json took the new settings beside the old score, and
    # neurorun-eval then disagreed with the run's own figure
    "env.env_config.sutton_barto_reward=true",  # a key the run's mapping lacks
    "problem.episode_length=12",
    "eval_episodes=4",
])
def test_resume_refuses_another_network_env_algorithm_optimizer_or_floor(tmp_path, override):
    run(tiny("generations=1"), run_dir=tmp_path)
    key = override.split("=")[0]
    with pytest.raises(ValueError, match=rf"resume: {key}=.* but the run was started with "
                                         rf"{key}=.*Fix: drop {key}="):
        resume.load_run_config(tmp_path, [override])
    same = resume.load_run_config(tmp_path, ["env.id=CartPole-v1"])  # unchanged: fine
    assert same.env.id == "CartPole-v1"


@pytest.mark.parametrize(("override", "fix"), [
    # ARS's option on a PGPE run: "Fix: algo.popsize=0.1", which was then refused
    ("algo.step_size=0.1", "Fix: leave it out: it is an option of algo=ars, and the run keeps "
                           "its algo=pgpe."),
    # no algorithm's: "add it with +algo.noise=0.1", which was then refused
    ("algo.wobble=0.1", "Fix: check the spelling: no algorithm has that option."),
    ("algo.popsiz=8", "Fix: algo.popsize=8."),
    # a run's own algo key (not an option of any algorithm): not "no algorithm has it"
    ("algo.distributd=true", "Fix: algo.distributed=true."),
])
def test_resume_names_a_fix_for_a_key_the_run_lacks_that_works(tmp_path, override, fix):
    run(tiny("generations=1"), run_dir=tmp_path)
    key = override.split("=")[0]
    with pytest.raises(ValueError) as refused:
        resume.load_run_config(tmp_path, [override])
    assert str(refused.value) == (f"resume: {override!r}: the saved config has no key {key!r}. "
                                  f"{fix}")


def test_resume_takes_a_whole_mapping_that_merges_to_the_runs_own(tmp_path):
    """The env's keywords given whole are merged, as Hydra merges them: the same keywords
    again are no change; another value is."""
    run(tiny("generations=1", "+env.env_config.sutton_barto_reward=false"), run_dir=tmp_path)
    same = resume.load_run_config(tmp_path, ["env.env_config={sutton_barto_reward: false}"])
    assert same.env.env_config == {"sutton_barto_reward": False}
    with pytest.raises(ValueError, match=r"^resume: env.env_config=\{sutton_barto_reward:true\}"
                                         r" but the run was started with env.env_config="
                                         r"\{sutton_barto_reward:false\}"):
        resume.load_run_config(tmp_path, ["env.env_config={sutton_barto_reward: true}"])


def test_resume_of_a_sweep_folder_or_a_deleted_key_names_the_fix(tmp_path):
    """A sweep's folder was told "no saved config", and `~key` had no fix."""
    (tmp_path / "sweep").mkdir()
    (tmp_path / "sweep" / "multirun.yaml").write_text("hydra: {}\n")
    with pytest.raises(FileNotFoundError, match=r"is a sweep's folder; each of its jobs is a run "
                                                r"of its own\. Fix: resume=<one job's folder"):
        resume.load_run_config(tmp_path / "sweep", [])
    run(tiny("generations=1"), run_dir=tmp_path / "run")
    with pytest.raises(ValueError, match=r"^resume: cannot delete 'eval_every' from a saved "
                                         r"run's config\. Fix: drop ~eval_every, or give "
                                         r"eval_every a value\.$"):
        resume.load_run_config(tmp_path / "run", ["~eval_every"])


@pytest.mark.parametrize(("algo", "started"), [("cmaes", False), ("sep_cmaes", True)])
def test_resume_refuses_another_covariance_shape_and_changes_nothing(tmp_path, algo, started):
    """`algo.separable=true` on a full CMA-ES run blamed state.pt: "algorithm.search.cov is a
    torch.float32 tensor of shape (10, 10), expected ... (10,); the file was changed"."""
    run(tiny("generations=1", f"algo={algo}"), run_dir=tmp_path)
    before = {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*")
              if p.is_file() and p.name != layout.LOCK_FILE}
    override = f"algo.separable={str(not started).lower()}"
    with pytest.raises(ValueError) as refused:
        run(resume.load_run_config(tmp_path, ["generations=2", override]), run_dir=tmp_path)
    message = str(refused.value)
    assert f"resume: {override} but the run was started with " \
           f"algo.separable={str(started).lower()}" in message
    assert f"Fix: drop {override}, or start a new run" in message
    assert "file was changed" not in message
    assert {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*")
            if p.is_file() and p.name != layout.LOCK_FILE} == before


def test_a_covariance_changed_in_the_saved_config_is_named_beside_state_pt(tmp_path):
    """`separable: true` written into a full CMA-ES run's saved config blamed state.pt alone:
    "the file was changed or is not this run's"."""
    run(tiny("generations=1", "algo=cmaes"), run_dir=tmp_path)
    config_path = layout.saved_config_path(tmp_path)
    saved = OmegaConf.load(config_path)
    saved.algo.separable = True
    OmegaConf.save(saved, config_path)
    state = (tmp_path / "checkpoints" / "state.pt").read_bytes()
    with pytest.raises(ConfigError) as refused:
        run(resume.load_run_config(tmp_path, ["generations=2"]), run_dir=tmp_path)
    message = str(refused.value)
    assert "algorithm.search.cov is a torch.float32 tensor of shape (10, 10)" in message
    assert f"the file, or the config it is read with ({config_path}), was changed" in message
    assert (tmp_path / "checkpoints" / "state.pt").read_bytes() == state


def test_resume_names_a_fixed_key_the_runs_algorithm_lacks_as_missing(tmp_path):
    """algo.separable on a PGPE run read "started with algo.separable=null"."""
    run(tiny("generations=1"), run_dir=tmp_path)
    with pytest.raises(ValueError, match=r"^resume: 'algo.separable=true': the saved config has "
                                         r"no key 'algo.separable'"):
        resume.load_run_config(tmp_path, ["algo.separable=true"])


@pytest.mark.parametrize("value", ["1.5", "null"])
def test_resume_refuses_a_start_setting_nothing_would_read(tmp_path, value):
    """A resumed run goes on from its saved search state: without restarts a new
    algo.radius_init would do nothing, and says so with the value as the override wrote it
    (it said `None`); with restarts (restart.patience) the next restart reads it."""
    run(tiny("generations=1", "algo.radius_init=2.0"), run_dir=tmp_path)
    with pytest.raises(ValueError, match=rf"^resume: algo.radius_init={value} but the run "
                                         r"started from algo.radius_init=2.0; it goes on from "
                                         r"its saved search state.*Fix: drop algo.radius_init="):
        resume.load_run_config(tmp_path, [f"algo.radius_init={value}"])
    resumed = resume.load_run_config(tmp_path, ["algo.radius_init=1.5", "restart.patience=2",
                                                "generations=10"])
    assert resumed.algo.radius_init == 1.5


@pytest.mark.parametrize("key", ["problem/obs_stats", "best/obs_stats"])
def test_resume_refuses_statistics_of_another_variance_floor(tmp_path, key):
    """state.pt's statistics normalize with the run's floor (problem.observation_min_variance):
    a state of another floor scored its policies otherwise."""
    run(tiny("generations=2", "env=Pendulum-v1", "problem.observation_normalization=true",
             "problem.observation_min_variance=0"), run_dir=tmp_path)
    path = craft_state(tmp_path, set_key(f"{key}/min_variance", 0.01))
    with pytest.raises(ConfigError, match=rf"{path}: {key.replace('/', '.')}.min_variance is "
                                          r"0\.01, expected 0\.0 \(this run's problem"):
        run(resume.load_run_config(tmp_path, ["generations=3"]), run_dir=tmp_path)


def test_a_run_saved_before_the_floor_existed_keeps_its_floor_of_001(tmp_path):
    """Its saved config lacks problem.observation_min_variance: it ran with 0.01."""
    run(tiny("generations=1"), run_dir=tmp_path)
    saved = layout.saved_config_path(tmp_path)
    config = OmegaConf.load(saved)
    del config.problem["observation_min_variance"]
    OmegaConf.save(config, saved)
    with pytest.raises(ValueError, match=r"started with problem.observation_min_variance=0\.01;"):
        resume.load_run_config(tmp_path, ["+problem.observation_min_variance=0"])
    assert "observation_min_variance" not in resume.load_run_config(tmp_path, []).problem


def test_a_misspelt_key_on_resume_is_told_the_key_it_meant(tmp_path):
    """It advised `+algo.popsiz=3`, which the config check then refused."""
    run(tiny("generations=1"), run_dir=tmp_path)
    with pytest.raises(ValueError, match=r"no key 'algo.popsiz'\. Fix: algo.popsize=3\.$"):
        resume.load_run_config(tmp_path, ["algo.popsiz=3"])
    with pytest.raises(ValueError, match=r"Fix: check the spelling, or add it with "
                                         r"\+problem.zzz=3\.$"):  # a key added since?
        resume.load_run_config(tmp_path, ["problem.zzz=3"])


@pytest.mark.parametrize(("overrides", "expected"), [
    (["generations=1"], "generations=1 but the run has done 2 already"),
    (["generations=5", "max_interactions=50"], "max_interactions=50 but the run has done "),
    (["generations=5", "max_time=0.0001"], "max_time=0.0001 but the run has run for "),
    # CartPole's center_eval is at least 8 (a step pays 1): a target below it was reached
    (["generations=5", "target_score=-5"], "target_score=-5 but the run's last center_eval, "
                                           "[0-9.]+, reached it already"),
])
def test_a_resume_with_no_work_left_is_refused_and_changes_nothing(tmp_path, overrides,
                                                                   expected):
    """It printed "stopped: generations: 2 of 1 done" and rewrote the saved config to its
    new limit, with a resume record, each time."""
    run(tiny("generations=2"), run_dir=tmp_path)
    before = {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*")
              if p.is_file() and p.name != ".neurorun.lock"}
    with pytest.raises(ConfigError, match=rf"resume: {expected}.*so it would stop at once\. "
                                          r"Fix: "):
        run(resume.load_run_config(tmp_path, overrides), run_dir=tmp_path)
    assert {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*")
            if p.is_file() and p.name != ".neurorun.lock"} == before


@pytest.mark.parametrize("edited", ["CartPole-v0", "Acrobot-v1", "NoSuchEnv-v0"])
def test_an_env_edited_in_the_saved_config_is_not_resumed(tmp_path, edited):
    """The run went on in CartPole-v0, its policy files then naming that env; an env of other
    sizes was refused as a state.pt of another layout."""
    run(tiny("generations=1"), run_dir=tmp_path)
    saved = tmp_path / ".hydra" / "config.yaml"
    saved.write_text(saved.read_text().replace("id: CartPole-v1", f"id: {edited}"))
    kept = {p.name: p.read_bytes() for p in (tmp_path / "checkpoints").iterdir()}
    with pytest.raises(ConfigError, match=rf"resume: env.id='{edited}' but the run's "
                                          r"checkpoints were saved with 'CartPole-v1'"):
        run(resume.load_run_config(tmp_path, ["generations=2"]), run_dir=tmp_path)
    assert {p.name: p.read_bytes() for p in (tmp_path / "checkpoints").iterdir()} == kept


@pytest.mark.parametrize("key, saved_line, edited_line", [
    ("network.spec", "spec: Linear(obs_length, act_length)",
     "spec: Linear(obs_length, act_length) >> Tanh()"),
    ("network.network_args", "network_args: {}", "network_args: {unused: 2}")])
def test_a_network_edited_in_the_saved_config_is_not_resumed(tmp_path, key, saved_line,
                                                              edited_line):
    """A Tanh after the linear layer (as many weights) went on from the saved weights under
    another network, and the policy files then named it."""
    run(tiny("generations=1"), run_dir=tmp_path)
    saved = tmp_path / ".hydra" / "config.yaml"
    assert saved_line in saved.read_text()
    saved.write_text(saved.read_text().replace(saved_line, edited_line))
    kept = {p.name: p.read_bytes() for p in (tmp_path / "checkpoints").iterdir()}
    with pytest.raises(ConfigError, match=rf"resume: {key}=.* but the run's checkpoints were "
                                          r"saved with .*Fix: "):
        run(resume.load_run_config(tmp_path, ["generations=2"]), run_dir=tmp_path)
    assert {p.name: p.read_bytes() for p in (tmp_path / "checkpoints").iterdir()} == kept


@pytest.mark.parametrize("started", [False, True])
@pytest.mark.parametrize("changed", ["on the command line", "in the saved config"])
def test_a_resume_cannot_change_observation_normalization(tmp_path, started, changed):
    """It blamed state.pt: "problem.obs_stats is None, expected a mapping ...; the file was
    changed or is not this run's"."""
    key = "problem.observation_normalization"
    run(tiny("generations=1", f"{key}={started}"), run_dir=tmp_path)
    state = (tmp_path / "checkpoints" / "state.pt").read_bytes()
    overrides = ["generations=2"]
    if changed == "on the command line":
        overrides.append(f"{key}={not started}")
    else:
        saved = OmegaConf.load(layout.saved_config_path(tmp_path))
        saved.problem.observation_normalization = not started
        OmegaConf.save(saved, layout.saved_config_path(tmp_path))
    with pytest.raises(ConfigError) as refused:
        run(resume.load_run_config(tmp_path, overrides), run_dir=tmp_path)
    message = str(refused.value)
    assert f"{key}={str(not started).lower()}, but the run was started with " \
           f"{key}={str(started).lower()}" in message
    assert f"Fix: drop {key}=" in message and "file was changed" not in message
    assert (tmp_path / "checkpoints" / "state.pt").read_bytes() == state


def test_resume_with_deleted_metrics_stops_with_one_line_and_writes_no_nul(tmp_path):
    run(tiny("generations=2"), run_dir=tmp_path)
    (tmp_path / "metrics.jsonl").unlink()
    with pytest.raises(ConfigError, match="metrics.jsonl is missing.*restore it") as info:
        run(resume.load_run_config(tmp_path, ["generations=3"]), run_dir=tmp_path)
    assert "\n" not in str(info.value)
    assert not (tmp_path / "metrics.jsonl").exists()
    assert b"\0" not in (tmp_path / "metrics.csv").read_bytes()


def test_a_new_run_refuses_a_folder_that_holds_a_run(tmp_path):
    run(tiny("generations=1"), run_dir=tmp_path)
    before = (tmp_path / "metrics.csv").read_bytes()
    with pytest.raises(ConfigError, match=r"already holds a run.*Fix: `neurorun resume="):
        run(tiny("generations=1", "seed=5"), run_dir=tmp_path)
    assert (tmp_path / "metrics.csv").read_bytes() == before  # nothing overwritten


def test_a_full_disk_mid_checkpoint_leaves_every_checkpoint_file_of_one_generation(
        tmp_path, monkeypatch):
    """The disk fills while the checkpoint of generation 4 is written (torch's zip writer
    fails with its own error, as it does on a full disk): last.*, best.* and state.pt all stay
    those of generation 2, the run says it is the disk, and resuming continues from there."""
    run_dir = tmp_path / "run"
    save_run_config(tiny("generations=4", "checkpoint_every=2"), run_dir)
    real_save = torch.save

    def save(obj, path, *args, **kwargs):
        if (run_dir / "checkpoints" / "state.pt").is_file():  # full after generation 2's
            raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 64")
        return real_save(obj, path, *args, **kwargs)

    monkeypatch.setattr(torch, "save", save)
    monkeypatch.setattr(atomic.shutil, "disk_usage", lambda folder: SimpleNamespace(free=0))
    with pytest.raises(atomic.DiskFullError, match="No space left on device"):
        run(tiny("generations=4", "checkpoint_every=2"), run_dir=run_dir)
    folder = run_dir / "checkpoints"
    assert sorted(p.name for p in folder.iterdir()) == [
        "best.json", "best.pkl", "best.pt", "last.json", "last.pkl", "last.pt", "state.pt"]
    generations = {json.loads((folder / "last.json").read_text())["generation"],
                   torch.load(folder / "state.pt", weights_only=True)["generation"]}
    assert generations == {2}
    assert torch.equal(torch.load(folder / "last.pt", weights_only=True)["solution"],
                       torch.as_tensor(last_solution(run_dir)))
    monkeypatch.undo()
    resumed = run(resume.load_run_config(run_dir, ["generations=4"]), run_dir=run_dir)
    assert resumed["generation"] == 4
    assert [int(row["generation"]) for row in metric_rows(run_dir)] == [1, 2, 3, 4]


def test_a_run_folder_that_cannot_hold_checkpoints_is_refused_before_generation_1(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "checkpoints").write_text("a file where the folder goes")
    with pytest.raises(ConfigError, match=r"has a file at checkpoints, where a run or the tools "
                       r"open a folder.*Fix: remove it"):
        run(tiny("generations=3"), run_dir=run_dir)
    assert not (run_dir / "metrics.csv").exists()  # no generation ran


# resume= of a run folder on a read-only filesystem was an 18-line OSError
# traceback from taking the lock; a folder that cannot be written is one line (EROFS stands in
# for a read-only mount: root writes through chmod 0o555)
@pytest.mark.parametrize("lock", [True, False])
def test_a_read_only_run_folder_is_one_line(tmp_path, monkeypatch, lock):
    run_dir = tmp_path / "run"
    (run_dir / "checkpoints").mkdir(parents=True)
    if lock:
        (run_dir / layout.LOCK_FILE).write_text("neurorun pid 1 on host h\n")
    real_open = os.open

    def read_only(path, flags, *args, **kwargs):
        if str(path).startswith(str(run_dir)) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise OSError(30, "Read-only file system", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", read_only)
    with pytest.raises(ValueError, match=r"^run folder '.*run' cannot be written \(Read-only "
                       r"file system\).*Fix: .*copy it .*resume the copy"):
        run_folder.lock_run(run_dir)  # what the command takes before Hydra writes


# hydra.run.dir with a newline was accepted, and every path printed after
# it (the run folder, best policy, the resume command) broke over two lines
@pytest.mark.parametrize("name", ["r_nl\nX", "tab\there", "bell\x07", "del\x7f"])
def test_a_folder_name_with_a_control_character_is_refused(tmp_path, name):
    with pytest.raises(ValueError, match=r"^hydra.run.dir=.*a control character.*Fix: "):
        run_folder.require_creatable(tmp_path / name, "hydra.run.dir")
    assert list(tmp_path.iterdir()) == []
    run_folder.require_creatable(tmp_path / "sp ü nï cødé", "hydra.run.dir")  # not control
