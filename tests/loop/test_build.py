"""build.py: a config's parts (the env backend `auto` picks, the problem's and algorithm's
arguments, the evaluator), checked against the configs' own values and the documented rules."""

import importlib.util

import pytest
import torch

from neurorun.cli.app import compose_config
from neurorun.common.errors import ConfigError
from neurorun.config.checks import validate_config
from neurorun.loop.build import (
    build_algorithm,
    build_parts,
    make_evaluator,
    problem_kwargs,
    resolve_env_backend,
)
from neurorun.loop.restarts import Attempt

ENVPOOL = importlib.util.find_spec("envpool") is not None


def tiny(*overrides):
    """The typed config of a tiny run with ``overrides``."""
    return validate_config(compose_config(["debug=default", "logger.console.quiet=true",
                                           *overrides]))


@pytest.mark.parametrize(("env", "chosen"), [
    ("CartPole-v1", "gymnasium"),  # auto keeps CartPole on gymnasium (docs/backends.md)
    ("Pendulum-v1", "envpool" if ENVPOOL else "gymnasium"),
])
def test_auto_is_fixed_to_the_backend_chosen_so_a_resumed_run_keeps_it(env, chosen):
    """The choice; that a run saves it for a resume: tests/config/test_checks.py (CartPole),
    tests/envs/test_envpool_env.py (EnvPool)."""
    config = tiny(f"env={env}")
    assert config.env.backend == "auto"
    assert resolve_env_backend(config) == chosen
    assert problem_kwargs(config)["env"] == (f"envpool::{env}" if chosen == "envpool" else env)


def test_a_prefixed_id_or_a_chosen_backend_is_left_as_it_is():
    assert resolve_env_backend(tiny("env.id=gym::CartPole-v1")) is None
    assert resolve_env_backend(tiny("env.backend=gymnasium")) is None


def test_a_backend_that_contradicts_the_id_names_env_id():
    with pytest.raises(ConfigError, match=r"env.id='gym::CartPole-v1': env.backend=envpool "
                                          r"contradicts"):
        resolve_env_backend(tiny("env.id=gym::CartPole-v1", "env.backend=envpool"))


def test_the_problem_gets_the_configs_problem_section_and_env_settings():
    cfg = tiny("problem.num_episodes=3", "problem.episode_length=17",
               "problem.decrease_rewards_by=0.5", "network=linear")
    kwargs = problem_kwargs(cfg)
    assert (kwargs["num_episodes"], kwargs["episode_length"], kwargs["decrease_rewards_by"]) == (
        3, 17, 0.5)
    assert kwargs["network"] == "Linear(obs_length, act_length)"
    # the problem's seed is one of its own, not the run's (the run's seed feeds several parts)
    assert kwargs["seed"] != cfg.seed
    assert problem_kwargs(tiny("seed=1"))["seed"] != kwargs["seed"]


def test_the_center_starts_inside_the_initial_bounds_and_each_restart_elsewhere():
    cfg = tiny("env=CartPole-v1", "network=linear", "problem.initial_bounds=[-0.5,0.25]")
    problem, algorithm = build_parts(cfg)
    try:
        center = algorithm.center
        assert center.shape == (10,)  # 4 x 2 weights + 2 biases
        assert bool(((center >= -0.5) & (center <= 0.25)).all())
        assert float(center.std()) > 0.05  # drawn over the bounds, not the default +-1e-5
        torch.testing.assert_close(build_algorithm(cfg, problem).center, center)
        again = build_algorithm(cfg, problem, restart=1)
        assert not torch.equal(again.center, center)
        assert bool(((again.center >= -0.5) & (again.center <= 0.25)).all())
        bigger = build_algorithm(cfg, problem, restart=1, start=Attempt(popsize=40))
        assert bigger.popsize == 40 and algorithm.popsize == 10
    finally:
        problem.close()


def test_a_center_init_given_is_the_center():
    cfg = tiny("env=CartPole-v1", "network=linear",
               f"algo.center_init=[{','.join(str(0.1 * i) for i in range(10))}]")
    problem, algorithm = build_parts(cfg)
    problem.close()
    assert algorithm.center.tolist() == pytest.approx([0.1 * i for i in range(10)])


def test_an_unknown_env_is_a_config_error_naming_env_id():
    with pytest.raises(ConfigError, match=r"env.id='NoSuchEnv-v0'"):
        build_parts(tiny("env.id=NoSuchEnv-v0"))


def test_the_local_evaluator_is_the_problem_and_an_unknown_one_is_refused():
    cfg = tiny()
    problem, _ = build_parts(cfg)
    try:
        assert make_evaluator(cfg, problem) is problem
    finally:
        problem.close()
    with pytest.raises(ConfigError, match=r"parallel.name='mpi': expected one of local, ray"):
        tiny("parallel.name=mpi")
