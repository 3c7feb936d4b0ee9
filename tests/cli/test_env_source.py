"""env=<any gymnasium id, brax or Playground name>, in every spelling, served by neurorun://."""

from pathlib import Path

import pytest
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.overrides_parser import OverridesParser

from neurorun.cli.app import compose_config
from neurorun.common.errors import ConfigError
from neurorun.envs.names import canonical_env_id, env_slug
from neurorun.loop.runner import Runner
from neurorun.record.layout import run_dir_name

SPELLINGS = ["env=brax::humanoid", "env=gym::Humanoid-v5", "env=CartPole-v1", "env=brax/humanoid"]


@pytest.mark.parametrize(("name", "canonical", "slug"), [
    ("brax/humanoid", "brax::humanoid", "brax_humanoid"),
    ("brax::humanoid", "brax::humanoid", "brax_humanoid"),
    ("gym/Humanoid-v5", "gym::Humanoid-v5", "Humanoid-v5"),
    ("gym::Humanoid-v5", "gym::Humanoid-v5", "Humanoid-v5"),
    ("ALE/Pong-v5", "ALE/Pong-v5", "ALE_Pong-v5"),
    ("my_pkg.envs:make", "my_pkg.envs:make", "my_pkg.envs_make"),
    ("playground/CheetahRun", "playground::CheetahRun", "playground_CheetahRun"),
])
def test_spellings_map_to_one_id_and_one_folder_name(name, canonical, slug):
    assert canonical_env_id(name) == canonical
    assert env_slug(name) == slug


def test_a_backends_row_is_a_spelling_of_env_ids(monkeypatch):
    """The spellings come from the one table of backends (which loads no env library:
    tests/test_packaging.py)."""
    from neurorun.envs import backends

    assert canonical_env_id("tiny/line") == "tiny/line"
    monkeypatch.setitem(backends.BACKENDS, "tiny", backends.BACKENDS["gym"])
    assert canonical_env_id("tiny/line") == "tiny::line"
    assert canonical_env_id("factory/x") == "factory/x"  # a kind, not a prefix


@pytest.mark.parametrize(("override", "env_id", "shaping"), [
    ("env=brax::humanoid", "brax::humanoid", 0.0),  # the preset: its physics, below
    ("env=brax/humanoid", "brax::humanoid", 0.0),
    # the preset files Humanoid-v5.yaml and Hopper-v5.yaml (ARS's shifts 5 and 1), with the
    # backend prefix kept
    ("env=gym::Humanoid-v5", "gym::Humanoid-v5", 5.0),
    ("env=envpool/Hopper-v5", "envpool::Hopper-v5", 1.0),
    ("env=envpool/HalfCheetah-v5", "envpool::HalfCheetah-v5", 0.0),
    ("env=CartPole-v1", "CartPole-v1", 0.0),
    ("env=Acrobot-v1", "Acrobot-v1", 0.0),  # no preset: served generically
    ("env=gym::MountainCarContinuous-v0", "gym::MountainCarContinuous-v0", 0.0),
    ("env=brax::hopper", "brax::hopper", 0.0),
    ("env=playground/CheetahRun", "playground::CheetahRun", 0.0),
])
def test_every_spelling_composes(override, env_id, shaping):
    cfg = compose_config([override], hydra_config=True)
    assert cfg.env.id == env_id
    assert cfg.problem.decrease_rewards_by == shaping
    if env_id == "brax::humanoid":  # its preset's, not brax's default physics
        assert cfg.env.env_config.backend == "spring"
    assert cfg.hydra.run.dir.startswith(f"runs/{env_slug(env_id)}/pgpe/")


def test_spellings_work_inside_a_multirun_list():
    """The basic sweeper escapes `::` in each job's override; the job still gets the id."""
    sweep = "env=" + ",".join(spelling.removeprefix("env=") for spelling in SPELLINGS)
    overrides = OverridesParser.create().parse_overrides([sweep, "seed=0,1"])
    (jobs,) = BasicSweeper.split_arguments(overrides, None)
    assert len(jobs) == 8
    ids = [compose_config(job).env.id for job in jobs[::2]]
    assert ids == ["brax::humanoid", "gym::Humanoid-v5", "CartPole-v1", "brax::humanoid"]


def test_generic_env_has_the_preset_keys():
    cfg = compose_config(["env=Acrobot-v1"])
    assert dict(cfg.env) == {"id": "Acrobot-v1", "env_config": {}, "target_score": None,
                             "backend": "auto", "num_threads": None, "note": None}
    assert cfg.target_score is None


def test_unknown_env_fails_before_anything_is_built_and_names_close_ids(tmp_path):
    cfg = compose_config(["env=CartPole-v9", "debug=default"])
    with pytest.raises(ConfigError) as caught:
        Runner(cfg, run_dir=tmp_path / "run")
    message = str(caught.value)
    assert "env.id='CartPole-v9'" in message and "CartPole-v1" in message
    assert not (tmp_path / "run").exists()  # no run folder, no metrics, no env


def test_default_run_folders_never_reuse_an_existing_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    first = run_dir_name(None, "CartPole-v1", "pgpe", 0)
    Path(first).mkdir(parents=True)  # a run started in the same second
    second = run_dir_name(None, "CartPole-v1", "pgpe", 0)
    assert second != first and not Path(second).exists()
    assert second.startswith("runs/CartPole-v1/pgpe/") and second.endswith(("_s0", "_s0_2"))


@pytest.mark.parametrize("name", ["../algo/snes", "../config"])
def test_an_env_name_with_path_parts_is_one_config_line_and_no_folder(tmp_path, name):
    """`env=../algo/snes` composed SNES's settings as the env (a traceback),
    `env=../config` the primary config (Hydra's report of an interpolation)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "neurorun.cli.app", f"env={name}",
                           "debug=default", "hydra.run.dir=run"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"neurorun: config error: env={name}: an env name has no path parts (`..`, `.`, a "
        "leading or doubled `/`). Fix: a gymnasium id (ALE/Pong-v5 too), brax::<name> or "
        "playground::<name>"]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["./CartPole-v1", "/tmp/x", "brax//ant", "brax/../algo/snes",
                                  "../algo/snes"])
def test_the_env_source_refuses_path_parts(name):
    from hydra.plugins.config_source import ConfigLoadError

    from neurorun.cli.env_source import env_path_error

    assert env_path_error(name).startswith(f"env={name}: an env name has no path parts")
    with pytest.raises(ConfigLoadError, match="an env name has no path parts"):
        compose_config([f"env={name}"])
    for good in ("ALE/Pong-v5", "brax/humanoid", "gym::Humanoid-v5", "my_pkg.envs:make"):
        assert env_path_error(good) is None
