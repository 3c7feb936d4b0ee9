"""The `neurorun` console script, run in a subprocess as a user would."""

import csv
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from neurorun.algorithms import ALGORITHMS
from neurorun.cli.app import compose_config

ROOT = Path(__file__).resolve().parents[2]


def neurorun(*args, cwd, timeout=180, test_envs=False, env=None):
    """The installed console script; ``test_envs``: with the tests' env factories importable
    (tests.cli.failing_env); ``env``: environment variables to set."""
    script = Path(sys.executable).with_name("neurorun")
    extra = {**({"PYTHONPATH": str(ROOT)} if test_envs else {}), **(env or {})}
    return subprocess.run([str(script), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **extra} if extra else None)


def rows(run_dir):
    with open(Path(run_dir) / "metrics.csv", newline="") as file:
        return list(csv.DictReader(file))


def test_help_lists_every_group_and_its_options(tmp_path):
    result = neurorun("--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    for line in ("algo: ars, cem, cmaes, openai_es, pgpe, sep_cmaes, snes, xnes", "parallel: local",
                 "problem: default, gymne, vecgymne", "debug: default"):
        assert line in result.stdout
    assert "env: Ant-v5, BipedalWalker-v3, CartPole-v1," in result.stdout
    assert "brax::ant" in result.stdout
    groups = {line.split(":")[0] for line in result.stdout.split("Configuration (this run)")[0]
              .splitlines() if ": " in line and not line.startswith(" ")}
    assert {"algo", "env", "network", "problem", "parallel", "logger", "experiment", "debug",
            "hparams_search"} <= groups and "algo_common" not in result.stdout


def test_a_clean_run_prints_only_neurorun_lines(tmp_path):
    # EnvPool's Pendulum spaces made gymnasium warn about float64 bounds on every run
    result = neurorun("debug=default", "env=Pendulum-v1", "logger.console.quiet=true",
                      cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "WARN" not in result.stderr and "Warning" not in result.stderr


def test_a_config_without_the_objective_key_ends_with_its_default(tmp_path):
    """A run's config that lacks `objective` (a hand-edited saved one): the run's last lines
    name the declared default, as the run itself used it (it was a traceback at the end)."""
    result = neurorun("debug=default", "generations=1", "~objective", "eval_every=0",
                      "target_score=null", "logger.console.quiet=true", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "objective:   best_center_eval = nan" in result.stdout


@pytest.mark.parametrize(("args", "expected"), [
    (["env=NoSuchEnv-v0"], "env.id='NoSuchEnv-v0': unknown gymnasium env id 'NoSuchEnv-v0'. "
                           "Fix: a registered id"),
    (["env.backend=bogus"], "env.backend='bogus'; expected one of ['auto', 'gymnasium', "
                            "'envpool']. Fix: env.backend=auto"),
])
def test_an_unknown_env_or_backend_is_one_line_with_its_fix(tmp_path, args, expected):
    """Before, "env NoSuchEnv-v0 runs on gymnasium (env.backend=auto picked it...)" came
    first, and neither line said a fix."""
    result = neurorun("debug=default", *args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr[-3000:]
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("neurorun: config error: ") and expected in line


@pytest.mark.extras("envpool")
def test_library_messages_print_once_and_reach_the_run_log_quiet_keeps_warnings(tmp_path):
    picked = "env Hopper-v5 runs on envpool (env.backend=auto picked it"
    loud = neurorun("debug=default", "env=Hopper-v5", "generations=1", "hydra.run.dir=loud",
                    cwd=tmp_path)
    assert loud.returncode == 0, loud.stderr[-3000:]
    assert (loud.stdout + loud.stderr).count(picked) == 1
    assert f"neurorun: {picked}" in loud.stderr
    assert picked in (tmp_path / "loud" / "neurorun.log").read_text()
    quiet = neurorun("debug=default", "env=Hopper-v5", "generations=1", "hydra.run.dir=quiet",
                     "logger.console.quiet=true", cwd=tmp_path)
    assert quiet.returncode == 0 and picked not in quiet.stderr + quiet.stdout


def test_info_searchpath_shows_the_packaged_configs(tmp_path):
    result = neurorun("--info", "searchpath", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "pkg://neurorun.conf" in result.stdout
    assert "neurorun://neurorun.conf" in result.stdout


def test_every_algorithm_runs_in_one_multirun(tmp_path):
    names = ",".join(ALGORITHMS)
    result = neurorun("-m", f"algo={names}", "env=gym::CartPole-v1", "debug=default",
                      cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    (sweep,) = (tmp_path / "runs" / "multirun").iterdir()
    jobs = sorted(p.name for p in sweep.iterdir() if p.is_dir())
    assert jobs == sorted(f"{i}_CartPole-v1_{name}_s0" for i, name in enumerate(ALGORITHMS))
    for job in jobs:
        table = rows(sweep / job)
        assert [row["generation"] for row in table] == ["1", "2"]
        assert int(table[0]["popsize"]) == 10
        assert (sweep / job / "checkpoints" / "best.pkl").is_file()
    assert result.stdout.count("best policy:") == len(ALGORITHMS)
    assert result.stdout.count("checkpoints/best.pt") == len(ALGORITHMS)  # the safe file


def test_config_error_exits_2_with_one_message(tmp_path):
    result = neurorun("algo.popsize=abc", cwd=tmp_path)
    assert result.returncode == 2
    assert "algo.popsize='abc'" in result.stderr and "Fix:" in result.stderr
    assert "Traceback" not in result.stderr
    assert not list(tmp_path.rglob(".hydra"))  # no stub run folder is left behind


# what ended in an OmegaConf or Hydra traceback is one line naming the key
@pytest.mark.parametrize(("arg", "expected"), [
    ("algo.center_learning_rate=${oc.env:NOPE_XYZ}",
     "algo.center_learning_rate='${oc.env:NOPE_XYZ}' cannot be resolved"),
    ("network.spec=${network.spec}", "network.spec='${network.spec}' cannot be resolved"),
    ("algo.center_learning_rate=${oc.env:HOME}", "algo.center_learning_rate="),
    ("hydra.run.dir=a_file", "hydra.run.dir='a_file': cannot make that folder"),
    ("seed=${oc.env:NOPE_XYZ}", "seed=${oc.env:NOPE_XYZ} cannot be resolved"),  # names the folder
])
def test_an_unresolvable_value_or_folder_is_one_config_error(tmp_path, arg, expected):
    (tmp_path / "a_file").write_text("not a folder\n")
    result = neurorun("debug=default", arg, cwd=tmp_path)
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.count("\n") == 1 and expected in result.stderr, result.stderr[-2000:]
    assert "Fix:" in result.stderr and "Traceback" not in result.stderr
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == [tmp_path / "a_file"]  # no stub


def test_a_cmaes_popsize_too_small_is_a_config_error_without_a_resume_hint(tmp_path):
    """One line and exit 2, before any env is built."""
    result = neurorun("debug=default", "algo=sep_cmaes", "algo.popsize=2", cwd=tmp_path)
    assert result.returncode == 2 and "algo.popsize=2" in result.stderr, result.stderr[-2000:]
    assert "resume=" not in result.stderr and "Traceback" not in result.stderr
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]


def test_a_run_folder_that_cannot_be_made_is_refused_before_hydra_makes_it(tmp_path):
    from neurorun.cli.folder_claim import folder_error

    (tmp_path / "a_file").write_text("")
    for folder in (tmp_path / "a_file", tmp_path / "a_file" / "sub", "/proc/self/nope"):
        message = folder_error([f"hydra.run.dir={folder}"])
        assert message.startswith(f"hydra.run.dir='{folder}': cannot make that folder")
    assert folder_error([f"hydra.run.dir={tmp_path / 'new' / 'run'}"]) is None
    assert [p.name for p in tmp_path.iterdir()] == ["a_file"]  # the probe leaves nothing


def test_resume_of_a_missing_folder_creates_nothing(tmp_path):
    missing = tmp_path / "no" / "such" / "run"
    result = neurorun(f"resume={missing}", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and f"resume='{missing}'" in result.stderr
    assert "Fix:" in result.stderr and not (tmp_path / "no").exists()


def test_cfg_job_with_resume_prints_the_config_the_resume_runs(tmp_path):
    """`--cfg job resume=<run>` printed the packaged defaults (popsize 20, generations 100)."""
    run = tmp_path / "run"
    assert neurorun("debug=default", "algo.popsize=12", f"hydra.run.dir={run}",
                    cwd=tmp_path).returncode == 0
    shown = neurorun("--cfg", "job", f"resume={run}", "generations=5", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    expected = OmegaConf.load(run / ".hydra" / "config.yaml")
    expected.generations, expected.resume = 5, str(run)
    assert OmegaConf.create(shown.stdout) == expected
    for flags in (["--cfg", "all"], ["--cfg", "job", "-p", "algo"]):
        refused = neurorun(*flags, f"resume={run}", cwd=tmp_path)
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1
        assert "Fix: --cfg job alone" in refused.stderr


def test_a_path_stdout_cannot_encode_is_printed_with_a_question_mark(tmp_path):
    """Under PYTHONIOENCODING=ascii a run in a folder named with a non-ASCII letter trained,
    then ended in a UnicodeEncodeError (rc 1) printing its folder."""
    run = tmp_path / "r\u00fcn"
    result = neurorun("debug=default", f'hydra.run.dir="{run}"', cwd=tmp_path,
                      env={"PYTHONIOENCODING": "ascii"})
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"run folder:  {tmp_path}/r?n" in result.stdout
    assert (run / "checkpoints" / "best.pt").is_file()


@pytest.mark.parametrize("argv", [["-m", "resume=run_a,run_b"], ["-m", "seed=0,1", "resume=run_a"],
                                  ["--multirun", "resume=run_a"]])
def test_resume_in_a_sweep_is_refused_before_any_job(tmp_path, argv):
    """Each job started again from generation 0 in a new folder of the sweep, exit 0."""
    result = neurorun(*argv, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "with -m" in result.stderr
    assert "Fix: resume each run with a command of its own" in result.stderr
    assert list(tmp_path.iterdir()) == []  # no sweep folder


def test_a_new_run_into_a_folder_holding_a_run_is_refused_before_hydra_writes(tmp_path):
    first = neurorun("debug=default", "hydra.run.dir=run", cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    saved = (tmp_path / "run" / ".hydra" / "config.yaml").read_text()
    second = neurorun("debug=default", "seed=7", "hydra.run.dir=run", cwd=tmp_path)
    assert second.returncode == 2
    assert "hydra.run.dir='run' already holds a run" in second.stderr and "Fix:" in second.stderr
    assert (tmp_path / "run" / ".hydra" / "config.yaml").read_text() == saved


def test_a_job_this_machine_refuses_lets_the_others_run_and_is_listed(tmp_path):
    """A value the config takes but this machine cannot run (no GPU) is known at the job's
    start only: the sweep goes on (a value the config refuses stops it before any job:
    tests/cli/test_sweeps.py)."""
    result = neurorun("-m", "debug=default", "problem.device=cuda,cpu", "generations=1",
                      "hydra.sweep.dir=sweep", cwd=tmp_path)
    assert result.returncode == 2
    assert ("job 0 (debug=default problem.device=cuda generations=1) failed: config error: "
            "problem.device='cuda'") in result.stderr
    assert "1 job(s) of the sweep failed" in result.stderr
    assert "Traceback" not in result.stderr
    jobs = sorted(p.name for p in (tmp_path / "sweep").iterdir() if p.is_dir())
    assert jobs == ["1_CartPole-v1_pgpe_s0"]  # job 1 ran; job 0 left no folder
    assert [row["generation"] for row in rows(tmp_path / "sweep" / jobs[0])] == ["1"]


def test_resume_from_the_command_line_appends_and_keeps_the_folder(tmp_path):
    first = neurorun("debug=default", "checkpoint_every=0", cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    (run_dir,) = (tmp_path / "runs" / "CartPole-v1" / "pgpe").iterdir()
    second = neurorun(f"resume={run_dir}", "generations=4", cwd=tmp_path)
    assert second.returncode == 0, second.stderr[-3000:]
    assert [row["generation"] for row in rows(run_dir)] == ["1", "2", "3", "4"]
    saved = OmegaConf.load(run_dir / ".hydra" / "config.yaml")
    assert saved.generations == 4 and saved.algo.popsize == 10
    # the resumed subfolder's record held the bare defaults (popsize 20,
    # eval_episodes 5), not the debug=default config that ran (10, 2)
    (record,) = (run_dir / ".hydra").glob("resumed_*/config.yaml")
    resumed = OmegaConf.load(record)
    assert (resumed.generations, resumed.algo.popsize, resumed.eval_episodes) == (4, 10, 2)
    state = torch.load(run_dir / "checkpoints" / "state.pt", weights_only=False)
    assert state["generation"] == 4
    assert str(run_dir) in second.stdout


def test_preset_with_another_algorithm_runs_with_that_algorithms_defaults(tmp_path):
    """experiment=cartpole is tuned for PGPE (experiment_algo/cartpole/pgpe.yaml): with
    algo=cem none of its PGPE keys is composed (CEM has no learning rates), what the command
    line (radius_init) and a later group (debug=default's popsize 10) set stays, and the saved
    config (what resume reads) is the one that ran."""
    run_dir = tmp_path / "run"
    result = neurorun("experiment=cartpole", "algo=cem", "debug=default", "algo.radius_init=1.5",
                      "generations=1", f"hydra.run.dir={run_dir}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    algo = OmegaConf.load(run_dir / ".hydra" / "config.yaml").algo
    assert (algo.name, algo.popsize, algo.radius_init) == ("cem", 10, 1.5)
    assert "center_learning_rate" not in algo and "optimizer_config" not in algo
    assert rows(run_dir)[0]["popsize"] == "10"
    resumed = neurorun(f"resume={run_dir}", "generations=2", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert [row["generation"] for row in rows(run_dir)] == ["1", "2"]
    assert compose_config(["experiment=cartpole", "algo=pgpe"]).algo == compose_config(
        ["experiment=cartpole"]).algo  # naming the preset's own algorithm changes nothing


@pytest.mark.parametrize("preset", ["experiment=hopper", "experiment=hopper_pgpe",
                                    "experiment=swimmer", "env=Walker2d-v5", "env=Ant-v5"])
@pytest.mark.parametrize("algo", ["cmaes", "cem", "snes"])
def test_another_algorithm_on_a_preset_composes_as_if_the_preset_were_absent(preset, algo):
    """The algo block of `<preset> algo=Y` is the one `algo=Y` composes alone: no key of the
    preset's algorithm reaches Y (env_algo/ and experiment_algo/ hold them per algorithm)."""
    for extra in ([], ["debug=default"]):
        assert compose_config([preset, f"algo={algo}", *extra]).algo == (
            compose_config([f"algo={algo}", *extra]).algo)
    assert compose_config([preset, f"algo={algo}", "algo.popsize=6"]).algo.popsize == 6


def test_a_preset_key_of_another_algorithm_set_on_the_command_line_is_one_config_error(
        tmp_path):
    result = neurorun("experiment=hopper", "algo=cmaes", "algo.top_directions=8",
                      "debug=default", "hydra.run.dir=run", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "neurorun: config error: algo.top_directions=8: algo=cmaes has no option "
        "top_directions (an option of algo=ars). Fix: leave it out, or choose that algorithm.")
    assert not (tmp_path / "run").exists()


def test_an_envs_tuned_settings_reach_every_spelling_and_that_algorithm_only():
    """env_algo/Walker2d-v5/pgpe.yaml (radius 0.27, ClipUp's speed 0.05 against the default
    0.15) reaches a bare env= in each spelling and experiment=walker2d_pgpe, not another env's
    PGPE run, not ARS (which refuses radius_init): not experiment=walker2d, not algo=ars; brax
    humanoid's PGPE settings (stdev 0.0075 per parameter) reach both of its spellings."""
    for args in (["env=Walker2d-v5"], ["env=gym::Walker2d-v5"], ["env=envpool::Walker2d-v5"],
                 ["experiment=walker2d_pgpe"]):
        algo = compose_config(args).algo
        assert (algo.radius_init, algo.optimizer_config.max_speed) == (0.27, 0.05), args
    assert compose_config(["env=Hopper-v5"]).algo.optimizer_config.max_speed == 0.15
    ars = compose_config(["experiment=walker2d"]).algo
    assert "radius_init" not in ars and (ars.name, ars.popsize) == ("ars", 80)
    assert compose_config(["env=Walker2d-v5", "algo=ars"]).algo == compose_config(
        ["algo=ars"]).algo
    for spelling in ("brax::humanoid", "brax/humanoid", "brax_humanoid"):
        algo = compose_config([f"env={spelling}"]).algo
        assert (algo.radius_init, algo.stdev_init) == (None, 0.0075), spelling
    assert compose_config(["env=Ant-v5"]).algo.name == "ars"  # the env preset's default choice


@pytest.mark.slow
def test_default_run_reaches_475_in_under_a_minute(tmp_path):
    started = time.perf_counter()
    result = neurorun(cwd=tmp_path, timeout=120)
    seconds = time.perf_counter() - started
    assert result.returncode == 0, result.stderr[-3000:]
    (run_dir,) = (tmp_path / "runs" / "CartPole-v1" / "pgpe").iterdir()
    assert float(rows(run_dir)[-1]["center_eval"]) >= 475
    assert seconds < 60
    assert f"run folder:  {run_dir}" in result.stdout


@pytest.mark.slow
def test_brax_spelling_runs_for_real(tmp_path):
    result = neurorun("env=brax/inverted_pendulum", "debug=default", cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    (run_dir,) = (tmp_path / "runs" / "brax_inverted_pendulum" / "pgpe").iterdir()
    assert len(rows(run_dir)) == 2


@pytest.mark.extras("playground")
def test_playground_spelling_trains_from_the_command_line(tmp_path):
    result = neurorun("env=playground/CartpoleBalance", "debug=default", "hydra.run.dir=run",
                      cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    table = rows(tmp_path / "run")
    # popsize 10, one 50-step episode each (CartpoleBalance never ends an episode early)
    assert [int(r["total_interaction_count"]) for r in table] == [500, 1000]
    assert [int(r["total_episode_count"]) for r in table] == [10, 20]
    for row in table:  # rewards are in [0, 1] per step
        assert float(row["episode_length_min"]) == float(row["episode_length_max"]) == 50
        assert 0 < float(row["center_eval"]) <= 50
        assert 0 < float(row["episode_return_min"]) <= float(row["episode_return_max"]) <= 50
    assert OmegaConf.load(tmp_path / "run" / ".hydra" / "config.yaml").env.target_score == 950


@pytest.mark.extras("ray")
def test_more_ray_actors_than_cpus_share_them_and_say_so_once(tmp_path):
    result = neurorun("debug=default", "parallel=ray", "parallel.num_actors=8",
                      "parallel.num_cpus=2", "generations=1", "logger.console.quiet=true",
                      "hydra.run.dir=run", cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stderr.count("8 ray actors share this machine's 2 CPUs (0.25 CPU each)") == 1
    (row,) = rows(tmp_path / "run")
    assert int(row["popsize"]) == 10


def test_network_strings_are_quoted_for_hydra_as_the_shell_hands_them_over():
    from neurorun.cli.arguments import quote_network_strings

    spec = "Linear(obs_length, 32) >> Tanh() >> Linear(32, act_length)"
    assert quote_network_strings([f"network.spec={spec}", "algo=pgpe"]) == [
        f"network.spec='{spec}'", "algo=pgpe"]
    assert quote_network_strings(["+network.spec=Apply('x') >> Slice(0, 2)"]) == [
        "+network.spec='Apply(\\'x\\') >> Slice(0, 2)'"]
    # what Hydra already reads is left alone: names, quoted values, sweeps over quoted specs
    for arg in ("network.spec=mypkg.nets:Policy", f"network.spec='{spec}'",
                'network.spec="Linear(obs_length, act_length)","Linear(obs_length, 4)"'):
        assert quote_network_strings([arg]) == [arg]


# the free-form mappings take new keys as written, without Hydra's `+`
OPEN_KEYS = {"env.env_config.sutton_barto_reward": True, "network.network_args.hidden": 3,
             "parallel.actor_config.num_cpus": 1, "algo.optimizer_config.momentum": 0.8}


def test_the_open_mappings_take_new_keys_as_written(tmp_path):
    from neurorun.config.resume import load_run_config

    cfg = compose_config(["parallel=ray", *(f"{k}={v}" for k, v in OPEN_KEYS.items())])
    assert {key: OmegaConf.select(cfg, key) for key in OPEN_KEYS} == OPEN_KEYS
    assert cfg.algo.optimizer_config.max_speed == 0.15  # the preset's keys stay
    plus = compose_config(["+env.env_config.sutton_barto_reward=true"])  # `+` still works
    assert plus.env.env_config == {"sutton_barto_reward": True}
    # a mapping given whole was refused ("no key env.env_config.g"): merged, as Hydra merges
    whole = compose_config(["env.env_config={g: 5.0}", "network.network_args={hidden: 3}",
                            "algo.optimizer_config={momentum: 0.8}"])
    assert whole.env.env_config == {"g": 5.0} and whole.network.network_args == {"hidden": 3}
    assert whole.algo.optimizer_config == {"max_speed": 0.15, "momentum": 0.8}
    (tmp_path / ".hydra").mkdir()  # a saved run's config takes them on resume, too
    OmegaConf.save(compose_config([]), tmp_path / ".hydra" / "config.yaml")
    from neurorun.cli.arguments import open_mapping_overrides

    resumed = load_run_config(tmp_path, open_mapping_overrides(["algo.optimizer_config.x=1"]))
    assert resumed.algo.optimizer_config == {"max_speed": 0.15, "x": 1}
    resumed = load_run_config(tmp_path, open_mapping_overrides([  # whole: "picks a group"
        "parallel.actor_config={g: 5.0}", "algo.optimizer_config=null"]))
    assert resumed.parallel.actor_config == {"g": 5.0} and resumed.algo.optimizer_config is None
    with pytest.raises(Exception, match="env.env_confg"):  # a typo outside them is not taken
        compose_config(["env.env_confg.x=1"])


def test_a_new_env_config_key_runs_from_the_command_line(tmp_path):
    result = neurorun("debug=default", "generations=1", "env.backend=gymnasium",
                      "env.env_config.sutton_barto_reward=true", "hydra.run.dir=run",
                      cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    saved = OmegaConf.load(tmp_path / "run" / ".hydra" / "config.yaml")
    assert saved.env.env_config == {"sutton_barto_reward": True}


def test_a_sweep_over_network_strings_runs_one_job_per_spec(tmp_path):
    result = neurorun("-m", 'network.spec="Linear(obs_length, act_length)",'
                      '"Linear(obs_length, 4) >> Tanh() >> Linear(4, act_length)"',
                      "debug=default", "generations=1", "logger.console.quiet=true",
                      "hydra.sweep.dir=sweep", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    jobs = sorted((tmp_path / "sweep").glob("*_CartPole-v1_pgpe_s0"))
    specs = [OmegaConf.load(job / ".hydra" / "config.yaml").network.spec for job in jobs]
    assert specs == ["Linear(obs_length, act_length)",
                     "Linear(obs_length, 4) >> Tanh() >> Linear(4, act_length)"]


def test_a_bare_mujoco_env_trains_on_a_time_budget_and_names_its_preset(tmp_path):
    budgets = {"Swimmer-v5": 120, "Hopper-v5": 120, "HalfCheetah-v5": 120, "Walker2d-v5": 300,
               "Ant-v5": 600}
    for env, budget in budgets.items():
        cfg = compose_config([f"env={env}"])
        assert (cfg.generations, cfg.max_time) == (None, budget)
        assert cfg.problem.observation_normalization is True
        preset = compose_config([f"experiment={env.split('-')[0].lower()}"])
        assert preset.max_time is None and preset.generations == 100000
    # where the default PGPE falls over, the env preset runs ARS V2-t (the paper's Ant setup)
    ant = compose_config(["env=Ant-v5"]).algo
    assert (ant.name, ant.popsize, ant.top_directions, ant.step_size, ant.noise) == (
        "ars", 120, 20, 0.015, 0.025)
    assert compose_config(["experiment=ant"]).algo == ant
    default = compose_config([])  # CartPole: 100 generations, as fast as before
    assert (default.generations, default.max_time) == (100, None)
    result = neurorun("env=Hopper-v5", "generations=1", "logger.console.quiet=true",
                      "hydra.run.dir=run", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Hopper-v5 has a tuned preset: `neurorun experiment=hopper`" in result.stderr
    plain = neurorun("debug=default", "hydra.run.dir=plain", cwd=tmp_path)
    assert "tuned preset" not in plain.stderr  # the default run names none


def test_other_libraries_lines_go_to_the_run_log_not_the_console(tmp_path):
    """Root-logger INFO records (MJX's "Using JAX default device", once per
    env built) and installed packages' warnings (brax's) reach neurorun.log only."""
    from tests.cli.chatty_env import ROOT_LINE, SPEC, WARNING

    result = neurorun("debug=default", f"env={SPEC}", "problem.episode_length=null",
                      "logger.console.plain=true", "hydra.run.dir=run", cwd=tmp_path,
                      test_envs=True)
    assert result.returncode == 0, result.stderr[-3000:]
    output = result.stdout + result.stderr
    assert ROOT_LINE not in output and WARNING not in output
    assert "run folder:" in result.stdout  # the run's own lines still show
    log = (tmp_path / "run" / "neurorun.log").read_text()
    assert ROOT_LINE in log and f"UserWarning: {WARNING}" in log


@pytest.mark.parametrize(("overrides", "why"), [
    # NaN actions (log of -1): the toy env's reward 1 + action is NaN in every episode
    (["network.spec=Linear(obs_length, act_length) >> Apply('log(x - x - 1)')"],
     "no best score: all 2 center evaluation(s) met a NaN or infinite reward, observation or "
     "choice score"),
    (["eval_every=0", "target_score=null"],
     "no best score: no center evaluation ran (eval_every=0, 2 generation(s))"),
])
def test_a_run_without_a_best_score_says_why(tmp_path, overrides, why):
    """Such a run printed "best policy: .../best.pt" and nothing more."""
    from tests.cli.failing_env import SPEC

    result = neurorun("debug=default", f"env={SPEC}", "problem.episode_length=null",
                      *overrides, "logger.console.quiet=true", "hydra.run.dir=run",
                      cwd=tmp_path, test_envs=True)
    assert result.returncode == 0, result.stderr[-3000:]
    (line,) = [x for x in result.stdout.splitlines() if x.startswith("best policy:")]
    assert line.endswith(f"best.pt ({why}; it holds the last center)")


# a run that failed as it was built (its folder removed) pointed at the
# traceback in the removed folder's neurorun.log; with hydra.job.name=foo, at neurorun.log
# instead of foo.log
@pytest.mark.parametrize(("fail", "job_name", "log"), [("reset", "neurorun", None),
                                                        ("step", "foo", "foo.log")])
def test_the_traceback_pointer_names_the_log_that_holds_it(tmp_path, fail, job_name, log):
    from tests.cli.failing_env import SPEC

    result = neurorun("debug=default", f"env={SPEC}", "problem.episode_length=null",
                      f"+env.env_config.fail={fail}", "logger.console.quiet=true",
                      f"hydra.job.name={job_name}", "hydra.run.dir=run", cwd=tmp_path,
                      test_envs=True)
    assert result.returncode == 1, result.stderr[-3000:]
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("neurorun: the run failed")]
    if log is None:  # failed while the problem was built: no folder is left, no pointer
        assert not (tmp_path / "run").exists() and "traceback" not in line
    else:
        assert line.endswith(f"(traceback: {tmp_path / 'run' / log})")
        assert "Traceback" in (tmp_path / "run" / log).read_text()


# a misspelt key without + got Hydra's "To append to your config use
# +algo.popsiz=10", advice neurorun then refuses: one line naming the key and the closest one
@pytest.mark.parametrize(("override", "expected"), [
    ("algo.popsiz=10", "algo.popsiz=10: no key algo.popsiz (algo=pgpe); did you mean "
                       "algo.popsize? Fix: check the spelling"),
    ("problem.num_episode=2", "problem.num_episode=2: no key problem.num_episode; did you mean "
                              "problem.num_episodes? Fix: check the spelling"),
])
def test_a_misspelt_key_is_one_line_with_the_closest_key(override, expected, tmp_path):
    result = neurorun("debug=default", override, "hydra.run.dir=run", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [f"neurorun: config error: {expected} "
                                                  "(`neurorun --cfg job` shows every key)."]
    assert not (tmp_path / "run").exists()


def test_a_ray_key_without_plus_on_a_local_run_is_said_to_be_ray_s(tmp_path):
    """It was "no key parallel.num_cpus; did you mean parallel.num_actors?", where
    +parallel.num_cpus=2 got this line."""
    result = neurorun("debug=default", "parallel.num_cpus=2", "hydra.run.dir=run", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        "neurorun: config error: parallel.num_cpus=2 is a setting of parallel=ray, and this run "
        "evaluates in its own process (parallel=local). Fix: parallel=ray to use it, or leave "
        "it out."]
    assert not (tmp_path / "run").exists()


# unquoted non-ASCII text in an override was Hydra's 4-line
# LexerNoViableAltException: one line naming the override and how to quote it
def test_an_override_hydra_cannot_parse_is_one_line_saying_to_quote_it(tmp_path):
    result = neurorun("debug=default", "env=CartPöle-v1", "hydra.run.dir=run", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("neurorun: config error: 'env=CartPöle-v1' cannot be parsed")
    assert line.endswith("""Fix: quote the value: 'env="CartPöle-v1"'.""")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("args", "expected"), [
    (["algo=pgep"], "algo=pgep: no option 'pgep' of the group algo; did you mean algo=pgpe? "
                    "Fix: one of ars, cem, cmaes, openai_es, pgpe, sep_cmaes, snes, xnes"),
    (["network=mlp3"], "did you mean network=mlp, network=mlp2?"),
    (["experiment=foo"], "experiment=foo: no option 'foo' of the group experiment. Fix: one of"),
    (["--config-dir", "/nonexistent"], "--config-dir /nonexistent: no such folder. Fix: "),
    (["--config-dir", "mine", "algo=mine"], "algo=mine: no option 'mine' of the group algo"),
    # a list or mapping where Hydra wants one name: a TypeError's traceback, or Hydra's report
    (["algo=[1]"], "algo=[1]: algo= takes the name of one option of the config group algo, not "
                   "a list or mapping. Fix: algo=<name>"),
    (["env={a: 1}"], "env={a: 1}: env= takes the name of one option"),
    # null, a bool or a number: Hydra's ValueError "must be a string or a list", a traceback
    (["debug=null"], "debug=null: debug= takes the name of one option of the config group "
                     "debug, not null. Fix: debug=<name> (`neurorun --help` lists them), or "
                     "leave debug= out (none is picked by default)"),
    (["logger=true"], "logger=true: logger= takes the name of one option of the config group "
                      "logger, not true. Fix: logger=<name> (`neurorun --help` lists them), or -m"),
    # removing a group env_algo or experiment_algo is named after: Hydra's interpolation error
    (["~experiment"], "~experiment: the config group experiment cannot be removed"),
    (["~algo"], "~algo: the config group algo cannot be removed: other groups' choices are "
                "named after it. Fix: algo=<name> (`neurorun --help` lists them)."),
    # a list for a mapping: Hydra's "Cannot merge DictConfig with ListConfig" in four lines
    (["network.network_args=[1]"], "network.network_args=[1]: expected a mapping of keys to "
                                   "values there. Fix: network.network_args={key: value}"),
    (["problem.alive_bonus_schedule=[1, 2]", "problem.alive_bonus_schedule={a: 1}"],
     "problem.alive_bonus_schedule={'a': 1}: expected a list there."),
])
def test_an_unknown_group_option_or_config_folder_is_one_line(tmp_path, args, expected):
    (tmp_path / "mine" / "algo").mkdir(parents=True)
    result = neurorun(*args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("neurorun: config error: ") and expected in line
    assert not (tmp_path / "runs").exists()


def test_a_users_config_file_that_is_not_yaml_is_one_line_naming_it(tmp_path):
    bad = tmp_path / "mine" / "algo" / "tabbed.yaml"
    bad.parent.mkdir(parents=True)
    bad.write_text("name: pgpe\n\tpopsize: 3\n")
    result = neurorun("--config-dir", "mine", "algo=tabbed", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"neurorun: config error: {bad}, line 2, column 1: not YAML (")
    assert "Fix: " in line


@pytest.mark.parametrize("group", ["env_algo", "experiment_algo"])
def test_the_groups_the_env_and_algorithm_pick_are_not_set_by_hand(tmp_path, group):
    result = neurorun(f"{group}=foo", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"neurorun: config error: {group}= is not chosen on the command line")
    assert not (tmp_path / "runs").exists()


def test_python_dash_m_neurorun_is_the_command(tmp_path):
    result = subprocess.run([sys.executable, "-m", "neurorun", "--help"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "algo: ars, cem, cmaes, openai_es, pgpe, sep_cmaes, snes, xnes" in result.stdout


def test_a_users_algorithm_file_of_another_name_runs(tmp_path):
    """algo.name is compared with the option only for neurorun's own algorithm files."""
    mine = tmp_path / "mine" / "algo" / "ars_small.yaml"
    mine.parent.mkdir(parents=True)
    mine.write_text("defaults:\n  - ars\n  - _self_\npopsize: 8\n")
    result = neurorun("--config-dir", "mine", "algo=ars_small", "debug=default",
                      "algo.popsize=8", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
