"""Hyperparameter searches: the task returns the run's objective to Hydra's Optuna sweeper."""

import csv
import json
import math
import re
from pathlib import Path

import pytest
import yaml

from neurorun.cli.app import compose_config
from neurorun.common.errors import ConfigError
from neurorun.loop.objective import objective_value
from neurorun.loop.runner import Runner
from tests.cli.test_cli import neurorun


def write_metrics(folder: Path, centers, steps_per_generation=100):
    """metrics.jsonl with these center evaluations (None: not evaluated that generation)."""
    lines = [json.dumps({"generation": g + 1, "center_eval": c,
                         "total_interaction_count": (g + 1) * steps_per_generation})
             for g, c in enumerate(centers)]
    (folder / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    return folder


@pytest.mark.parametrize(("name", "target", "expected"), [
    ("best_center_eval", None, 40.0),
    ("last_center_eval", None, 25.0),
    ("mean_center_eval_last_2", None, (40.0 + 25.0) / 2),  # the two last evaluated generations
    ("mean_center_eval_last_9", None, (10.0 + 30.0 + 40.0 + 25.0) / 4),  # fewer than K: all
    ("neg_interactions_to_target", 30.0, -300.0),  # center 30 >= 30 first in generation 3
    ("neg_interactions_to_target", 50.0, -2 * 600.0),  # never: minus twice the 600 steps taken
])
def test_objectives_from_the_metrics_of_a_run(tmp_path, name, target, expected):
    folder = write_metrics(tmp_path, [10.0, None, 30.0, 40.0, None, 25.0])
    assert objective_value(name, folder, target) == expected


def test_a_miss_scores_twice_the_budget_whatever_stopped_it(tmp_path):
    """A trial that max_time stopped after 600 steps scored -1,200, above one that reached the
    target at 5,000 of a 10,000-step budget; misses past the budget scored by their overshoot."""
    folder = write_metrics(tmp_path, [10.0, None, 30.0, 40.0, None, 25.0])
    assert objective_value("neg_interactions_to_target", folder, 50.0, budget=10_000) == -20_000
    assert objective_value("neg_interactions_to_target", folder, 50.0, budget=500) == -1_200
    assert objective_value("neg_interactions_to_target", folder, 30.0, budget=10_000) == -300


def test_an_objective_without_center_evaluations_is_nan(tmp_path):
    assert math.isnan(objective_value("best_center_eval", write_metrics(tmp_path, [None]), None))


@pytest.mark.parametrize(("overrides", "message"), [
    (["objective=best_eval"], "objective='best_eval': expected one of"),
    (["objective=mean_center_eval_last_0"], "objective='mean_center_eval_last_0'"),
    (["objective=neg_interactions_to_target", "target_score=null"], "target_score=<score>"),
])
def test_bad_objectives_are_one_line_before_any_env(tmp_path, overrides, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        Runner(compose_config(["debug=default", *overrides]), run_dir=tmp_path)


def test_the_run_returns_its_objective_computed_from_its_metrics(tmp_path):
    cfg = compose_config(["debug=default", "generations=4", "objective=mean_center_eval_last_3"])
    result = Runner(cfg, run_dir=tmp_path).run()
    with open(tmp_path / "metrics.csv", newline="") as file:
        centers = [float(row["center_eval"]) for row in csv.DictReader(file)]
    assert len(centers) == 4
    assert result["objective"] == pytest.approx(sum(centers[-3:]) / 3, rel=1e-12)


def best_value(output: str) -> float:
    return float(re.search(r"Best value: (\S+)", output).group(1))


def job_folders(sweep: Path) -> list[Path]:
    return sorted(p for p in sweep.iterdir() if (p / "metrics.csv").is_file())


@pytest.mark.extras("optuna")
def test_optuna_search_preset_returns_each_runs_best_center_eval(tmp_path):
    result = neurorun("hparams_search=optuna_pgpe_cartpole", "hydra.sweeper.n_trials=3",
                      "objective=best_center_eval", "max_interactions=3000",
                      "logger.console.quiet=true", "hydra.sweep.dir=sweep", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    jobs = job_folders(tmp_path / "sweep")
    assert len(jobs) == 3
    best = []
    for job in jobs:
        with open(job / "metrics.csv", newline="") as file:
            best.append(max(float(r["center_eval"]) for r in csv.DictReader(file)))
    assert best_value(result.stdout + result.stderr) == pytest.approx(max(best), rel=1e-9)
    assert "Directions: ['maximize']" in result.stdout + result.stderr


@pytest.mark.extras("optuna")
def test_the_mujoco_search_preset_runs_ars_on_hopper(tmp_path):
    result = neurorun("hparams_search=optuna_ars_hopper", "hydra.sweeper.n_trials=1",
                      "max_time=null", "generations=2", "logger.console.quiet=true",
                      "hydra.sweep.dir=sweep", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    (job,) = job_folders(tmp_path / "sweep")
    assert "Hopper-v5_ars" in job.name
    rows = [json.loads(line) for line in (job / "metrics.jsonl").read_text().splitlines()]
    # eval_every=2 (the preset): one center evaluation, so the mean of the last 5 is that one
    assert best_value(result.stdout + result.stderr) == pytest.approx(rows[1]["center_eval"])


@pytest.mark.extras("optuna")
def test_a_failing_trial_is_reported_and_the_search_goes_on(tmp_path):
    # a device this machine lacks (refused as the trial starts) and the CPU, drawn at random
    # (seeded); a value the config refuses stops the search before its first trial
    result = neurorun("-m", "hparams_search=optuna_pgpe_cartpole", "hydra/sweeper/sampler=random",
                      "hydra.sweeper.sampler.seed=3",  # cpu, cuda, cuda
                      "hydra.sweeper.n_trials=3", "hydra.sweeper.max_failure_rate=1",
                      "problem.device=choice(cuda,cpu)", "max_interactions=2000",
                      "logger.console.quiet=true", "hydra.sweep.dir=sweep", cwd=tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 2, output[-3000:]
    assert "problem.device='cuda'" in output and "Failed experiment" in output
    (job,) = job_folders(tmp_path / "sweep")  # the valid trial ran to the end
    assert "2 job(s) of the sweep failed" in result.stderr
    with open(job / "metrics.csv", newline="") as file:
        table = list(csv.DictReader(file))
    assert max(float(r["center_eval"]) for r in table) < 475  # 2,000 steps do not solve it
    assert best_value(output) == -2 * int(table[-1]["total_interaction_count"])


@pytest.mark.extras("optuna")
def test_a_minimizing_sweeper_gets_a_warning(tmp_path):
    result = neurorun("-m", "hydra/sweeper=optuna", "hydra.sweeper.n_trials=1",
                      "algo.center_learning_rate=interval(0.05,0.2)", "generations=1",
                      "logger.console.quiet=true", "hydra.sweep.dir=sweep", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Fix: hydra.sweeper.direction=maximize" in result.stderr


@pytest.mark.parametrize(("fail", "kept"), [("step", True), ("reset", False)])
def test_a_run_failing_in_the_users_env_is_one_line_naming_the_users_code(tmp_path, fail,
                                                                           kept):
    from tests.cli.failing_env import SPEC

    result = neurorun("debug=default", f"env={SPEC}", "problem.episode_length=null",
                      f"+env.env_config.fail={fail}", "logger.console.quiet=true",
                      "hydra.run.dir=run", cwd=tmp_path, test_envs=True)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("neurorun: the run failed")]
    assert f"toy {fail} exploded" in line and "failing_env.py:" in line
    assert f"in {fail} (" in line  # the user's function
    # failing in reset: while the problem was built, so no folder is left; in step: generation
    # 1 had started, the folder stays with the traceback in its log
    assert (tmp_path / "run").exists() is kept
    if kept:
        assert "Traceback" in (tmp_path / "run" / "neurorun.log").read_text()


def test_jobs_failing_at_run_time_are_each_reported_once_and_the_sweep_exits_2(tmp_path):
    from tests.cli.failing_env import SPEC

    result = neurorun(
        "-m", "debug=default", f"env={SPEC}", "problem.episode_length=null",
        "+env.env_config.fail=none,step,reset", "logger.console.quiet=true",
        "hydra.sweep.dir=sweep", cwd=tmp_path, test_envs=True)
    assert result.returncode == 2, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    report = result.stderr.split("neurorun: 2 job(s) of the sweep failed:")[1].splitlines()
    assert [line.split(" (")[0].strip() for line in report if line.strip()] == ["job 1", "job 2"]
    assert "env.env_config.fail=step" in report[1] and "toy step exploded" in report[1]
    assert "env.env_config.fail=reset" in report[2] and "toy reset exploded" in report[2]
    assert "traceback: " in report[1]  # job 1 ran a generation: its folder keeps the log
    assert result.stderr.count("neurorun: job 1 (") == 1  # one line when it failed
    logs = sorted((tmp_path / "sweep").glob("*/neurorun.log"))
    assert any("Traceback" in log.read_text() for log in logs)  # the job's own log keeps it
    (done,) = [p for p in (tmp_path / "sweep").iterdir() if (p / "checkpoints").is_dir()
               and p.name.startswith("0_")]
    assert len(rows_of(done)) == 2  # job 0 ran its two generations


# a job refused before its run began kept its folder's lock open
# for the rest of the sweep (one descriptor per such job: a long search ran out of them)
def test_a_job_refused_before_its_run_closes_its_folders_lock(tmp_path):
    from tests.cli.failing_env import SPEC

    result = neurorun(
        "-m", "debug=default", f"env={SPEC.replace(':make', ':count_locks')}",
        "problem.episode_length=null", f"+env.env_config.out={tmp_path / 'locks'}",
        "problem.device=cuda,cuda,cpu", "generations=1", "logger.console.quiet=true",
        "hydra.sweep.dir=sweep", cwd=tmp_path, test_envs=True)
    assert result.returncode == 2, result.stderr[-3000:]
    assert "neurorun: 2 job(s) of the sweep failed:" in result.stderr
    assert result.stderr.count("problem.device=cuda") >= 2  # each refused on this machine
    assert (tmp_path / "locks").read_text() == "1"  # the last job's own lock only


def rows_of(job):
    with open(job / "metrics.csv", newline="") as file:
        return list(csv.DictReader(file))


@pytest.mark.extras("optuna")
def test_a_search_whose_trials_have_no_objective_ends_in_one_report(tmp_path):
    # one generation's env steps with the preset's eval_every=2: the run stops before its
    # first center evaluation, which no check can foresee; a NaN objective
    result = neurorun("hparams_search=optuna_ars_hopper", "hydra.sweeper.n_trials=2",
                      "hydra.sweeper.max_failure_rate=1", "max_interactions=1",
                      "logger.console.quiet=true", "hydra.sweep.dir=sweep", cwd=tmp_path)
    assert result.returncode == 2, result.stderr[-3000:]
    assert "Traceback" not in result.stderr and "FutureWarning" not in result.stderr
    assert ("neurorun: 2 job(s) of the sweep failed (no trial completed: the search has no "
            "best)") in result.stderr
    assert result.stderr.count("objective mean_center_eval_last_5 = nan") == 4  # 2 + report


@pytest.mark.extras("optuna")
def test_a_search_stops_once_more_than_its_failure_rate_failed(tmp_path):
    """hydra.sweeper.max_failure_rate did nothing (the plugin's rule needs a raising trial):
    every trial ran. 0.25 of 4 trials: the second failure stops the search."""
    result = neurorun("hparams_search=optuna_ars_hopper", "hydra.sweeper.n_trials=4",
                      "max_interactions=1", "logger.console.quiet=true", "hydra.sweep.dir=sweep",
                      cwd=tmp_path)
    assert result.returncode == 2, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    assert ("neurorun: 2 job(s) of the sweep failed (more than "
            "hydra.sweeper.max_failure_rate=0.25 of n_trials=4: the search stops)") in result.stderr
    jobs = sorted(p.name.partition("_")[0] for p in (tmp_path / "sweep").iterdir() if p.is_dir())
    assert jobs == ["0", "1"]  # trials 2 and 3 never ran


# bad search settings, and a search over keys the chosen algorithm lacks,
# are one line before the first trial (they were tracebacks, or ended the search at trial 0)
@pytest.mark.parametrize(("args", "expected"), [
    (["-m", "hydra/sweeper=optuna", "algo.center_learning_rate=interval(0.3,0.01)"],
     "algo.center_learning_rate=interval(0.3,0.01) is not one Optuna takes (`low <= high`"),
    (["-m", "hydra/sweeper=optuna", "hydra.sweeper.n_trials=0",
      "algo.center_learning_rate=interval(0.01,0.3)"],
     "hydra.sweeper.n_trials=0; expected an integer >= 1. Fix:"),
    (["hparams_search=optuna_pgpe_cartpole", "algo=ars"],
     "the search sets algo.center_learning_rate, which algo=ars does not have"),
    # a choice of algorithm: the choice that lacks the key is named (ars has it, pgpe not)
    (["-m", "hydra/sweeper=optuna", "algo=choice(ars,pgpe)", "algo.step_size=interval(0.01,0.1)"],
     "the search sets algo.step_size, which algo=pgpe does not have"),
    # Optuna took them; its sampler's OverflowError was a traceback
    (["-m", "hydra/sweeper=optuna", "algo.center_learning_rate=interval(0.1,inf)"],
     "algo.center_learning_rate=interval(0.1,inf) has a bound that is not a finite number"),
    (["-m", "hydra/sweeper=optuna", "algo.center_learning_rate=tag(log,interval(nan,0.2))"],
     "interval(nan,0.2)) has a bound that is not a finite number"),
    # Optuna's and SQLAlchemy's tracebacks once the search started
    (["hparams_search=optuna_pgpe_cartpole", "hydra.sweeper.direction=up"],
     "hydra.sweeper.direction='up'; expected maximize or minimize. Fix:"),
    (["hparams_search=optuna_pgpe_cartpole", "hydra.sweeper.storage=bogus://x"],
     "hydra.sweeper.storage='bogus://x' cannot be opened (Can't load plugin: "
     "sqlalchemy.dialects:bogus). Fix:"),
    (["hparams_search=optuna_pgpe_cartpole", "hydra.sweeper.storage=sqlite:///no/folder/x.db"],
     "hydra.sweeper.storage='sqlite:///no/folder/x.db' cannot be opened ("),
    # every trial ran and then failed: its objective is read from center evaluations
    (["hparams_search=optuna_pgpe_cartpole", "eval_every=0", "target_score=null",
      "objective=best_center_eval"],
     "makes none (eval_every=0), so it would fail. Fix: eval_every=1"),
    (["hparams_search=optuna_pgpe_cartpole", "eval_every=3"],
     "needs center evaluations, but eval_every=3 > generations=1: none would run"),
    # Hydra's "Sweeping over Hydra's configuration is not supported", exit status 1
    (["hparams_search=optuna_pgpe_cartpole", "hydra.sweeper.params.algo.popsize=choice(10,12)"],
     "hydra.sweeper.params.algo.popsize=choice(10,12): a search space goes on the command line "
     "by its own key, not under hydra.sweeper.params. Fix: algo.popsize=choice(10,12)"),
    (["hparams_search=optuna_pgpe_cartpole", "hydra.sweeper.sampler.seed=abc"],
     "hydra.sweeper.sampler.seed=abc: Value 'abc' of type 'str' could not be converted to "
     "Integer. Fix:"),
])
@pytest.mark.extras("optuna")
def test_bad_search_settings_are_one_line_before_the_first_trial(tmp_path, args, expected):
    result = neurorun(*args, "generations=1", "logger.console.quiet=true",
                      "hydra.sweep.dir=sweep", cwd=tmp_path, timeout=120)
    assert result.returncode == 2, result.stderr[-3000:]
    assert "Traceback" not in result.stderr and "#0 :" not in result.stderr  # no trial ran
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("neurorun: config error")]
    assert expected in line and "Fix:" in line
    assert not (tmp_path / "sweep").exists() or not any((tmp_path / "sweep").iterdir())


LOOSE_SWEEPER = {  # Optuna's sweeper, as a user's own YAML file names it: untyped
    "_target_": "hydra_plugins.hydra_optuna_sweeper.optuna_sweeper.OptunaSweeper",
    "direction": "maximize", "storage": None, "study_name": None, "n_trials": 2, "n_jobs": 1,
    "max_failure_rate": 0.0, "sampler": {"_target_": "optuna.samplers.TPESampler", "seed": 0},
    "search_space": None, "params": None, "custom_search_space": None}


# a sweeper config of the user's own, which Hydra does not type, ran one trial for
# n_trials: true and took max_failure_rate: true as 1 (a bool is an int in Python)
@pytest.mark.parametrize(("key", "expected"), [
    ("n_trials", "hydra.sweeper.n_trials=True; expected an integer >= 1. Fix:"),
    ("max_failure_rate", "hydra.sweeper.max_failure_rate=True; expected a share of the trials "
                         "from 0 to 1. Fix:"),
])
@pytest.mark.extras("optuna")
def test_a_count_or_share_of_true_in_a_users_sweeper_is_refused(tmp_path, key, expected):
    folder = tmp_path / "conf" / "hydra" / "sweeper"
    folder.mkdir(parents=True)
    (folder / "loose.yaml").write_text(yaml.safe_dump({**LOOSE_SWEEPER, key: True}))
    result = neurorun("-m", f"hydra.searchpath=[file://{tmp_path / 'conf'}]",
                      "hydra/sweeper=loose", "algo.center_learning_rate=interval(0.01,0.3)",
                      "debug=default", "hydra.sweep.dir=sweep", cwd=tmp_path, timeout=120)
    assert result.returncode == 2, result.stderr[-3000:]
    (line,) = result.stderr.strip().splitlines()
    assert line == f"neurorun: config error: {expected} e.g. hydra.sweeper.{key}=" + (
        "20." if key == "n_trials" else "0.25.")
    assert not (tmp_path / "sweep").exists() or not any((tmp_path / "sweep").iterdir())


# a second sweep into the same hydra.sweep.dir had its jobs refused, but
# Hydra had already overwritten the earlier sweep's multirun.yaml; it is refused before Hydra
# writes, as a new run is in a folder holding a run
def test_a_sweep_into_a_folder_holding_a_sweep_is_refused_before_hydra_writes(tmp_path):
    sweep = tmp_path / "sw"
    sweep.mkdir()
    (sweep / "multirun.yaml").write_text("the earlier sweep's record\n")
    result = neurorun("-m", "debug=default", "seed=0,1", "hydra.sweep.dir=sw", cwd=tmp_path)
    assert result.returncode == 2, result.stderr[-3000:]
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("neurorun: config error: hydra.sweep.dir='sw' already holds a sweep "
                           "(multirun.yaml); ")
    assert "Fix: " in line
    assert (sweep / "multirun.yaml").read_text() == "the earlier sweep's record\n"
    assert [p.name for p in sweep.iterdir()] == ["multirun.yaml"]


# an Optuna search (which writes no multirun.yaml, and is a sweep without -m) into the folder
# of an earlier one had each trial refused, Hydra's "Failed experiment" lines between them
@pytest.mark.extras("optuna")
@pytest.mark.parametrize("earlier, said", [
    ("optimization_results.yaml", "a search (optimization_results.yaml)"),
    ("0_CartPole-v1_pgpe_s0/", "a run (0_CartPole-v1_pgpe_s0/)")])
def test_a_search_into_a_folder_holding_a_search_is_refused_before_it_starts(tmp_path, earlier,
                                                                           said):
    sweep = tmp_path / "opt"
    if earlier.endswith("/"):  # a search cut short: its trials' runs, no results yet
        (sweep / earlier / "checkpoints").mkdir(parents=True)
    else:
        sweep.mkdir()
        (sweep / earlier).write_text("the earlier search's results\n")
    before = sorted(str(p.relative_to(sweep)) for p in sweep.rglob("*"))
    result = neurorun("hparams_search=optuna_pgpe_cartpole", "hydra.sweeper.n_trials=2",
                      "hydra.sweep.dir=opt", cwd=tmp_path)
    assert result.returncode == 2, result.stderr[-3000:]
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"neurorun: config error: hydra.sweep.dir='opt' already holds "
                           f"{said}; ")
    assert sorted(str(p.relative_to(sweep)) for p in sweep.rglob("*")) == before


# a sweep over no value ran no job, exited 0 and left a folder holding only
# multirun.yaml: one line, exit 2, no folder
@pytest.mark.parametrize(("sweep", "refused"), [
    (["seed=0,abc"], "job 1 of the sweep (seed=abc debug=default"),
    (["seed=0,1", "algo.popsize=-3"], "job 0 of the sweep (seed=0 algo.popsize=-3"),
    # a glob lists the group's options through Hydra's config loader: without it the check
    # failed (a warning) and the jobs after a refused one ran
    (["algo=glob(*)", "algo.popsize=7"], "job 0 of the sweep (algo=ars algo.popsize=7"),
])
def test_a_sweep_with_a_refused_job_runs_none_and_leaves_no_folder(tmp_path, sweep, refused):
    result = neurorun("-m", *sweep, "debug=default", "hydra.sweep.dir=sw", cwd=tmp_path)
    assert result.returncode == 2, result.stderr[-3000:]
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"neurorun: config error: {refused}")
    assert "is refused, so no job ran: " in line and not (tmp_path / "sw").exists()


def test_a_sweep_over_algorithms_names_them_for_an_option_of_some(tmp_path):
    result = neurorun("-m", "algo=ars,cmaes", "algo.top_directions=2", cwd=tmp_path)
    assert result.returncode == 2, result.stderr[-3000:]
    (line,) = result.stderr.strip().splitlines()
    assert "a sweep over algo=ars, algo=cmaes is composed first with the default algo=pgpe" \
        in line
    assert "algo=cmaes of the sweep lacks it too" in line and "Fix: ++algo.top_directions=2" \
        in line
    assert list(tmp_path.iterdir()) == []


def test_algo_name_is_refused_for_the_group_that_chooses_it(tmp_path):
    result = neurorun("algo.name=cmaes", cwd=tmp_path)
    assert result.returncode == 2, result.stderr[-3000:]
    (line,) = result.stderr.strip().splitlines()
    assert line == ("neurorun: config error: algo.name=cmaes renames the algorithm algo=pgpe "
                    "chose, whose options come with it. Fix: algo=cmaes (each algorithm's "
                    "options: `neurorun --help`).")
    assert list(tmp_path.iterdir()) == []


def test_a_sweep_with_no_job_is_one_line_and_leaves_no_folder(tmp_path):
    result = neurorun("-m", "debug=default", "seed=range(0,0)", "hydra.sweep.dir=sw",
                      cwd=tmp_path)
    assert result.returncode == 2, result.stderr[-3000:]
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("neurorun: config error: seed=range(0,0) sweeps over no value")
    assert "Fix: " in line and not (tmp_path / "sw").exists()


# the check opened the study's database and left its connections
# open for the whole search (two descriptors of the file in the sweep's process)
@pytest.mark.extras("optuna")
def test_the_storage_check_closes_the_database_it_opened(tmp_path):
    from omegaconf import OmegaConf

    from neurorun.cli.optuna_study import check_study
    from tests.cli.failing_env import open_files

    database = tmp_path / "study.db"
    check_study(OmegaConf.create({"direction": "maximize",
                                  "storage": f"sqlite:///{database}"}), {})
    assert database.is_file()  # opened, its tables made
    assert str(database) not in open_files()


def test_an_interval_without_optunas_sweeper_is_one_line_and_leaves_no_folder(tmp_path):
    """The basic sweeper cannot run Optuna's search space: its traceback, rc 1."""
    result = neurorun("-m", "debug=default", "algo.center_learning_rate=interval(0.01,0.3)",
                      "hydra.sweep.dir=sw", cwd=tmp_path)
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stderr.strip().splitlines() == [
        "neurorun: config error: algo.center_learning_rate=interval(0.01,0.3): an interval is "
        "a search space of Optuna's sweeper, which this sweep does not use. Fix: add "
        "hydra/sweeper=optuna (or an hparams_search= preset; docs/sweeps.md), or sweep listed "
        "values (a,b,c or range(...))."]
    assert not (tmp_path / "sw").exists()


@pytest.mark.parametrize("sweep", ["seed=0,1", "seed=range(0,3)", "env.id='A','B'"])
def test_a_sweep_without_multirun_is_one_line(tmp_path, sweep):
    """Hydra's report was three to five lines and rc 1."""
    result = neurorun("debug=default", sweep, "hydra.run.dir=run", cwd=tmp_path)
    assert result.returncode == 2, result.stderr[-3000:]
    key = sweep.partition("=")[0]
    assert result.stderr.strip().splitlines() == [
        f"neurorun: config error: {sweep} is a sweep, which runs with -m. Fix: neurorun -m "
        f"{sweep} ..., or one value (a list is written {key}=[...])."]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.extras("optuna")
def test_a_stored_study_continued_with_its_seed_gets_a_warning(tmp_path, capsys):
    """A continued study (the presets' storage comment) drew its first trials again: TPE's
    generator starts afresh from sampler.seed in each process, for its n_startup_trials. The
    seeds that drew are recorded with the study: another seed was warned about too."""
    import optuna
    from omegaconf import OmegaConf

    from neurorun.cli.optuna_study import SEEDS_ATTR, check_study, record_seed

    url = f"sqlite:///{tmp_path / 'study.db'}"
    sweeper = OmegaConf.create({"direction": "maximize", "storage": url, "study_name": "s",
                                "sampler": {"_target_": "optuna.samplers.TPESampler",
                                            "seed": 0, "n_startup_trials": 4}})
    check_study(sweeper, {})  # a new study: nothing to say
    assert capsys.readouterr().err == ""
    study = optuna.create_study(study_name="s", storage=url, direction="maximize")
    study.optimize(lambda trial: trial.suggest_float("x", 0, 1), n_trials=2)
    capsys.readouterr()  # Optuna's own log lines
    check_study(sweeper, {})  # seeds not recorded (made by Optuna alone): it may
    assert capsys.readouterr().err == (
        "neurorun: warning: study 's' holds 2 finished trials, and hydra.sweeper.sampler.seed=0 "
        "may draw the same random trials again. Fix: another seed, e.g. "
        "hydra.sweeper.sampler.seed=1.\n")
    record_seed(sweeper)  # as a search with seed 0 passes its checks, or ends
    with_seed = {seed: OmegaConf.merge(sweeper, {"sampler": {"seed": seed}}) for seed in (1, 5)}
    check_study(with_seed[1], {})  # the fix given: a seed that drew none, no warning
    assert capsys.readouterr().err == ""
    record_seed(with_seed[1])
    record_seed(with_seed[5])
    assert optuna.load_study(study_name="s", storage=url).user_attrs[SEEDS_ATTR] == [0, 1, 5]
    check_study(sweeper, {})
    assert capsys.readouterr().err == (
        "neurorun: warning: study 's' holds 2 finished trials, and hydra.sweeper.sampler.seed=0 "
        "draws the same random trials again. Fix: another seed, e.g. "
        "hydra.sweeper.sampler.seed=6.\n")
    check_study(OmegaConf.merge(sweeper, {"sampler": {"seed": None}}), {})  # unseeded
    assert capsys.readouterr().err == ""
    study.optimize(lambda trial: trial.suggest_float("x", 0, 1), n_trials=2)
    capsys.readouterr()
    check_study(sweeper, {})  # past TPE's 4 random trials: its model draws the next ones
    assert capsys.readouterr().err == ""


@pytest.mark.extras("optuna")
def test_a_stored_study_continued_with_other_choices_is_refused(tmp_path, capsys):
    """Optuna's "CategoricalDistribution does not support dynamic value space" was a
    traceback at the first trial. The spaces are the sweeper plugin's own (it makes Optuna's
    deprecated classes, which the study stores converted): the same search, or another
    range, continues."""
    import optuna
    from omegaconf import OmegaConf

    from neurorun.cli.optuna_study import check_study
    from neurorun.cli.sweeps import _spaces
    from neurorun.common.errors import ConfigError

    url = f"sqlite:///{tmp_path / 'study.db'}"
    study = optuna.create_study(study_name="s", storage=url, direction="maximize")
    study.optimize(lambda trial: trial.suggest_categorical("algo.popsize", [8, 16])
                   + trial.suggest_float("algo.center_learning_rate", 0.1, 0.3)
                   + trial.suggest_int("algo.num_directions", 2, 8), n_trials=1)
    capsys.readouterr()
    sweeper = OmegaConf.create({"direction": "maximize", "storage": url, "study_name": "s"})
    for searched in (["algo.popsize=choice(8,16)", "algo.center_learning_rate=interval(0.1,0.3)",
                      "algo.num_directions=range(2,9)", "seed=3"],
                     ["algo.center_learning_rate=interval(0.01,0.5)"]):
        check_study(sweeper, _spaces(searched))
    assert capsys.readouterr().err == ""
    with pytest.raises(ConfigError) as refused:
        check_study(sweeper, _spaces(["algo.popsize=choice(8,12)"]))
    assert str(refused.value) == (
        "study 's' (hydra.sweeper.storage) searched algo.popsize over "
        "CategoricalDistribution(choices=(8, 16)), and this search gives "
        "CategoricalDistribution(choices=(8, 12)): Optuna keeps a key's choices within a "
        "study. Fix: the study's choices for algo.popsize, or another "
        "hydra.sweeper.study_name.")


@pytest.mark.parametrize("sweep", ["algo=choice(pgpe,snes)",
                                   "algo.optimizer_config={max_speed: 0.2},{max_speed: 0.3}"])
def test_a_group_or_mapping_sweep_without_multirun_gets_no_list_hint(tmp_path, sweep):
    """A group or a mapping was told `algo=[...]`, the mapping shown with neurorun's `++`."""
    result = neurorun("debug=default", sweep, "hydra.run.dir=run", cwd=tmp_path)
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stderr.strip().splitlines() == [
        f"neurorun: config error: {sweep} is a sweep, which runs with -m. Fix: neurorun -m "
        f"{sweep} ..., or one value."]


def test_an_interval_without_multirun_names_optunas_sweeper(tmp_path):
    result = neurorun("debug=default", "algo.center_learning_rate=interval(0.1,0.2)",
                      "hydra.run.dir=run", cwd=tmp_path)
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stderr.strip().splitlines() == [
        "neurorun: config error: algo.center_learning_rate=interval(0.1,0.2) is a search space "
        "of Optuna's sweeper. Fix: neurorun -m hydra/sweeper=optuna "
        "algo.center_learning_rate=interval(0.1,0.2) ... (docs/sweeps.md), or one value."]
