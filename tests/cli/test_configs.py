"""Every packaged config composes, says what each key does, and feeds the parts it configures."""

import re
from importlib import resources
from pathlib import Path

import pytest
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf, open_dict

from neurorun.algorithms import ALGORITHMS
from neurorun.algorithms.options import option_names
from neurorun.cli.app import CONFIG_MODULE
from neurorun.config.schema import load_config

CONF = Path(str(resources.files("neurorun.conf")))
GROUPS = ("algo", "network", "env", "problem", "parallel", "logger", "experiment", "debug")
TOP_LEVEL = ("seed", "generations", "max_interactions", "max_time", "target_score",
             "eval_every", "eval_episodes", "checkpoint_every", "resume", "torch_threads")


def options(group):
    return sorted(p.stem for p in (CONF / group).glob("*.yaml"))


@pytest.fixture(scope="module")
def composer():
    with initialize_config_module(CONFIG_MODULE, version_base="1.3"):
        yield lambda overrides: compose("config", overrides=overrides, return_hydra_config=True)


@pytest.mark.parametrize("group", GROUPS)
def test_every_option_of_every_group_composes(composer, group):
    assert options(group), f"conf/{group} has no options"
    for option in options(group):
        cfg = composer([f"{group}={option}"])
        assert cfg.hydra.run.dir
        job_config = cfg.copy()
        with open_dict(job_config):
            del job_config["hydra"]  # hydra.job.* is only set inside a job
        OmegaConf.resolve(job_config)  # every interpolation resolves
        assert cfg.hydra.runtime.choices[group] == option
        for key in TOP_LEVEL:
            assert key in cfg
        # the declared schema takes it (config/schema.py), each key its group's YAML sets as
        # written
        config = load_config(OmegaConf.to_container(job_config))
        if group == "algo":
            assert config.algo.name == option
        elif group in ("network", "problem", "parallel"):
            written = OmegaConf.to_container(OmegaConf.load(CONF / group / f"{option}.yaml"))
            for key, value in written.items():
                if key != "defaults":
                    assert getattr(getattr(config, group), key) == value, (option, key)


def flat(config, prefix=""):
    """{"optimizer_config.max_speed": 0.05, ...} of a nested mapping."""
    out = {}
    for key, value in config.items():
        if isinstance(value, dict):
            out.update(flat(value, f"{prefix}{key}."))
        else:
            out[prefix + key] = value
    return out


@pytest.mark.parametrize("group", ["env_algo", "experiment_algo"])
def test_every_tuned_file_is_picked_by_its_env_or_experiment_and_algorithm(composer, group):
    """<group>/<name>/<algo>.yaml is composed, all of it, by `env=<name>` (`experiment=<name>`)
    with its algorithm, and only by that pair: no file is left unreachable by a misspelt name."""
    named_by = group.removesuffix("_algo")
    files = sorted((CONF / group).glob("*/*.yaml"))
    assert files, f"conf/{group} has no files"
    for path in files:
        name, algo = path.parent.name, path.stem
        assert name in options(named_by) and algo in options("algo"), path
        cfg = composer([f"{named_by}={name}", f"algo={algo}"])
        assert cfg.hydra.runtime.choices[group] == f"{name}/{algo}"
        composed = OmegaConf.to_container(cfg.algo)
        for key, value in flat(OmegaConf.to_container(OmegaConf.load(path))).items():
            assert OmegaConf.select(OmegaConf.create(composed), key) == value, (path, key)
        assert not re.search(r"^algo:", (CONF / named_by / f"{name}.yaml").read_text(), re.M)


def test_default_is_pgpe_on_cartpole_with_target_475(composer):
    cfg = composer([])
    assert (cfg.algo.name, cfg.env.id, cfg.target_score) == ("pgpe", "CartPole-v1", 475)
    assert cfg.hydra.run.dir.startswith("runs/CartPole-v1/pgpe/")
    assert re.fullmatch(r"runs/CartPole-v1/pgpe/\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d_s0",
                        cfg.hydra.run.dir)


def test_algo_options_are_the_algorithms_options(composer):
    """Every key of algo/<name>.yaml is an option of that algorithm (but name, popsize,
    distributed)."""
    for name in options("algo"):
        cfg = composer([f"algo={name}"])
        keys = set(cfg.algo) - {"name", "popsize", "distributed"}
        assert cfg.algo.name in ALGORITHMS
        assert keys <= set(option_names(ALGORITHMS[cfg.algo.name].Options)), name


@pytest.mark.parametrize(("preset", "expected"), [
    ("cartpole", {"algo.popsize": 100, "algo.center_learning_rate": 0.1125,
                  "algo.optimizer_config.max_speed": 0.15, "algo.radius_init": 2.25,
                  "network.network_args.hidden": 16, "env.id": "CartPole-v1"}),
    ("lunarlander_continuous", {"algo.popsize": 200, "algo.center_learning_rate": 0.225,
                                "algo.optimizer_config.max_speed": 0.3, "algo.radius_init": 4.5,
                                "network.spec": "Linear(obs_length, act_length)",
                                "problem.observation_normalization": True}),
    ("brax_humanoid", {"algo.popsize": 4000, "algo.num_interactions": 3_000_000,
                       "algo.center_learning_rate": 0.1125, "algo.radius_init": 2.25,
                       "algo.optimizer_config.max_speed": 0.15, "network.network_args.hidden": 64,
                       "problem.decrease_rewards_by": 5.0,
                       "problem.alive_bonus_schedule": [400, 700, 10],
                       "problem.observation_normalization": True, "env.id": "brax::humanoid"}),
    ("humanoid", {"algo.popsize": 460, "algo.stdev_init": 0.0075, "algo.stdev_min": 0.0075,
                  "algo.stdev_max": 0.0075, "algo.center_learning_rate": 5.3333,
                  "algo.optimizer": None, "algo.ranking_method": "normalized",
                  "network.spec": "Linear(obs_length, act_length)",
                  "problem.decrease_rewards_by": 5.0, "problem.observation_normalization": True,
                  "env.id": "Humanoid-v5",
                  "env.env_config": {"include_cinert_in_observation": False,
                                     "include_cfrc_ext_in_observation": False}}),
])
def test_experiment_presets_hold_the_published_settings(composer, preset, expected):
    cfg = composer([f"experiment={preset}"])
    for key, value in expected.items():
        actual = OmegaConf.select(cfg, key)
        actual = OmegaConf.to_container(actual) if OmegaConf.is_config(actual) else actual
        assert actual == value, key
    text = (CONF / "experiment" / f"{preset}.yaml").read_text()
    assert "Source:" in text and "# @package _global_" in text


def test_config_yaml_names_every_group_folder():
    """A group is a folder of conf/: config.yaml's header names it and its defaults list picks
    it, so a new group is not missed by a reader of either."""
    folders = sorted(p.name for p in CONF.iterdir() if p.is_dir() and p.name != "__pycache__")
    text = (CONF / "config.yaml").read_text()
    header = text[:text.index("defaults:")]
    picked = {str(entry).removeprefix("optional ") for item in OmegaConf.load(
        CONF / "config.yaml").defaults if not isinstance(item, str) for entry in item}
    assert len(folders) >= 10
    assert [f for f in folders if not re.search(rf"\b{f}\b", header)] == []
    assert [f for f in folders if f not in picked] == []


def test_every_key_has_a_comment():
    """A key line carries a comment, or the line above it is one."""
    key_line = re.compile(r"^\s*(- )?[\w./@-]+( [\w/]+)?:(\s|$)")
    missing = []
    for path in sorted(CONF.rglob("*.yaml")):
        lines = path.read_text().splitlines()
        block_indent = None
        for number, line in enumerate(lines):
            indent = len(line) - len(line.lstrip())
            if block_indent is not None and (not line.strip() or indent > block_indent):
                continue  # inside a | or >- text block
            block_indent = None
            if not key_line.match(line):
                continue
            if re.search(r":\s*[|>]-?\s*(#.*)?$", line):
                block_indent = indent
            if "#" not in line and not lines[number - 1].lstrip().startswith("#"):
                missing.append(f"{path.relative_to(CONF)}:{number + 1}: {line.strip()}")
    assert not missing, "keys without a comment:\n" + "\n".join(missing)


def test_multirun_sweep_dir_has_one_subfolder_per_job(composer):
    cfg = composer(["env=brax::ant", "algo=cem", "seed=3"])
    with open_dict(cfg):
        cfg.hydra.job.num = 4
    assert cfg.hydra.sweep.dir.startswith("runs/multirun/")
    assert cfg.hydra.sweep.subdir == "4_brax_ant_cem_s3"
