"""The EnvPool backend against a direct EnvPool loop, its errors, and runs trained on it."""

import csv
import logging

import envpool
import numpy as np
import pytest
import torch

from neurorun.cli.app import compose_config
from neurorun.common.errors import ConfigError
from neurorun.common.seeding import derive_seed
from neurorun.envs import make_env, parse_spec, resolve_backend
from neurorun.envs.base import UnknownEnvError
from neurorun.envs.envpool_env import EQUIVALENT_IDS
from neurorun.loop.runner import run
from neurorun.problems import make_problem
from neurorun.tools.evaluate import evaluate

pytestmark = pytest.mark.extras("envpool")


def direct(env_id, seeds, **config):
    """A plain EnvPool of len(seeds) envs, env i seeded seeds[i]."""
    return envpool.make_gymnasium(env_id, num_envs=len(seeds), batch_size=len(seeds),
                                  num_threads=1, seed=seeds[0], env_seed=list(seeds), **config)


def test_prefix_and_spaces():
    assert parse_spec("envpool::Hopper-v5") == ("envpool", "Hopper-v5")
    env = make_env("envpool::Hopper-v5", 2, seed=0)
    assert env.single_observation_space.shape == (11,)
    assert env.single_action_space.shape == (3,) and env.skips_inactive
    env.close()


def test_reset_and_steps_match_a_direct_envpool_loop():
    env = make_env("envpool::HalfCheetah-v5", 3, seed=5, num_threads=2)
    reference = direct("HalfCheetah-v5", [5, 6, 7])
    np.testing.assert_array_equal(env.reset_arrays(), reference.reset()[0].astype(np.float32))
    rng = np.random.default_rng(0)
    for _ in range(5):
        actions = rng.uniform(-1, 1, size=(3, 6)).astype(np.float32)
        obs, reward, done = env.step_arrays(actions)
        ref_obs, ref_reward, *_ = reference.step(actions)
        np.testing.assert_array_equal(obs, ref_obs.astype(np.float32))
        np.testing.assert_array_equal(reward, ref_reward.astype(np.float64))
        assert not done.any()


def test_envs_left_out_are_not_stepped():
    env = make_env("envpool::Hopper-v5", 2, seed=0)
    first = env.reset_arrays()
    zeros = np.zeros((2, 3), dtype=np.float32)
    obs, reward, _ = env.step_arrays(zeros, np.array([False, True]))
    np.testing.assert_array_equal(obs[0], first[0])  # env 0 keeps its observation
    assert reward[0] == 0 and reward[1] != 0
    # env 0 stepped once now equals a fresh env seeded 0 stepped once
    reference = direct("Hopper-v5", [0])
    reference.reset()
    ref_obs, *_ = reference.step(zeros[:1])
    obs, _, _ = env.step_arrays(zeros, np.array([True, False]))
    np.testing.assert_array_equal(obs[0], ref_obs[0].astype(np.float32))


def test_observations_returned_are_never_written_into_later():
    """The rollout keeps each step's observation array (for the statistics): later steps,
    of every env or of some, leave the arrays returned before as they were."""
    env = make_env("envpool::Hopper-v5", 2, seed=0)
    kept = [env.reset_arrays()]
    copies = [kept[0].copy()]
    zeros = np.zeros((2, 3), dtype=np.float32)
    for active in (None, np.array([True, False]), np.array([False, True]), None):
        kept.append(env.step_arrays(zeros, active)[0])
        copies.append(kept[-1].copy())
    for array, copy in zip(kept, copies, strict=True):
        np.testing.assert_array_equal(array, copy)
    assert not np.array_equal(kept[1], kept[2])


def test_next_step_autoreset_and_episode_length():
    env = make_env("envpool::Hopper-v5", 2, seed=0, episode_length=3)
    env.reset_arrays()
    zeros = np.zeros((2, 3), dtype=np.float32)
    dones = [env.step_arrays(zeros)[2].copy() for _ in range(3)]
    assert [d.tolist() for d in dones] == [[False, False], [False, False], [True, True]]
    obs, reward, done = env.step_arrays(zeros)  # the autoreset step
    assert reward.tolist() == [0.0, 0.0] and not done.any()
    assert abs(obs[0, 0] - 1.25) < 0.01  # a fresh hopper's height


@pytest.mark.parametrize("active", [None, np.array([True, True])])
def test_an_ended_episode_resets_at_the_next_step_as_after_done(active):
    """end_episodes (a curriculum's cut): the env's next step is its autoreset step (reward 0,
    not done, a fresh hopper), whether the step names the envs to step or not; the others
    step on."""
    env = make_env("envpool::Hopper-v5", 2, seed=0)
    env.reset_arrays()
    zeros = np.zeros((2, 3), dtype=np.float32)
    for _ in range(20):  # the hopper falls from its start height
        env.step_arrays(zeros)
    env.end_episodes(np.array([1]))
    obs, reward, done = env.step_arrays(zeros, active)
    assert reward[1] == 0 and reward[0] != 0 and not done.any()
    assert abs(obs[1, 0] - 1.25) < 0.01 and abs(obs[0, 0] - 1.25) > 0.01
    obs, reward, _ = env.step_arrays(zeros, active)  # both step on
    assert reward[0] != 0 and reward[1] != 0


def test_reset_with_one_seed_per_env_equals_pools_seeded_alike():
    env = make_env("envpool::Pendulum-v1", 3, seed=0)
    obs = env.reset_arrays([11, 40, 7])
    for i, seed in enumerate([11, 40, 7]):
        np.testing.assert_array_equal(obs[i], direct("Pendulum-v1", [seed]).reset()[0][0])


# gymnasium's Humanoid-v5 observation: qpos 22, qvel 23, cinert 130, cvel 78, qfrc_actuator
# 17, cfrc_ext 78 (gymnasium's docs); without cinert and cfrc_ext: qpos, qvel, cvel, qfrc
HUMANOID_LEAN = {"include_cinert_in_observation": False, "include_cfrc_ext_in_observation": False}
HUMANOID_LEAN_COLUMNS = np.r_[0:45, 175:270]


def test_gymnasium_observation_options_keep_those_columns_of_envpools_observation():
    env = make_env("envpool::Humanoid-v5", 3, seed=4, **HUMANOID_LEAN)
    reference = direct("Humanoid-v5", [4, 5, 6])
    assert env.single_observation_space.shape == (140,)
    np.testing.assert_array_equal(
        env.reset_arrays(), reference.reset()[0][:, HUMANOID_LEAN_COLUMNS].astype(np.float32))
    rng = np.random.default_rng(0)
    for _ in range(5):
        actions = rng.uniform(-0.4, 0.4, size=(3, 17)).astype(np.float32)
        obs, reward, _ = env.step_arrays(actions)
        ref_obs, ref_reward, *_ = reference.step(actions)
        np.testing.assert_array_equal(obs, ref_obs[:, HUMANOID_LEAN_COLUMNS].astype(np.float32))
        np.testing.assert_array_equal(reward, ref_reward.astype(np.float64))


@pytest.mark.parametrize("positions", [True, False])
def test_gymnasium_observation_options_observe_what_gymnasiums_env_does(positions):
    import gymnasium

    # no reset noise: both envs start from the model's own pose, then take the same actions
    options = {**HUMANOID_LEAN, "reset_noise_scale": 0.0,
               "exclude_current_positions_from_observation": positions}
    env = make_env("envpool::Humanoid-v5", 1, seed=0, **options)
    reference = gymnasium.make("Humanoid-v5", **options)
    assert env.single_observation_space.shape == reference.observation_space.shape
    np.testing.assert_allclose(env.reset_arrays()[0], reference.reset(seed=0)[0], atol=1e-6)
    rng = np.random.default_rng(0)
    for _ in range(10):
        actions = rng.uniform(-0.4, 0.4, size=(1, 17)).astype(np.float32)
        obs, *_ = env.step_arrays(actions)
        np.testing.assert_allclose(obs[0], reference.step(actions[0])[0], rtol=1e-3, atol=1e-3)


def test_bad_input_is_one_line():
    with pytest.raises(UnknownEnvError, match="EnvPool has no env 'Hoper-v5'.*Hopper-v5"):
        make_env("envpool::Hoper-v5", 2)
    with pytest.raises(ValueError, match="env_config.ctrl_cost: .*closest: ctrl_cost_weight"):
        make_env("envpool::Hopper-v5", 2, ctrl_cost=0.1)
    with pytest.raises(ValueError, match="num_threads=0; expected an integer >= 1"):
        make_env("envpool::Hopper-v5", 2, num_threads=0)
    with pytest.raises(ValueError, match="num_threads=2 sets EnvPool's threads, but env "
                                         "'Hopper-v5' runs on gymnasium"):
        make_env("Hopper-v5", 2, num_threads=2)


def test_resolve_backend():
    assert resolve_backend("Hopper-v5", "auto") == "envpool::Hopper-v5"
    assert resolve_backend("Hopper-v5", "gymnasium") == "Hopper-v5"
    assert resolve_backend("Acrobot-v1", "auto") == "Acrobot-v1"  # not tested equal
    assert resolve_backend("CartPole-v1", "auto") == "CartPole-v1"  # gymnasium's is faster
    assert resolve_backend("CartPole-v1", "envpool") == "envpool::CartPole-v1"
    assert resolve_backend("brax::ant", "auto") == "brax::ant"
    assert "Hopper-v5" in EQUIVALENT_IDS
    with pytest.raises(ValueError, match="contradicts env.id='gym::Hopper-v5'"):
        resolve_backend("gym::Hopper-v5", "envpool")
    with pytest.raises(ValueError, match="env.backend='cpp'"):
        resolve_backend("Hopper-v5", "cpp")


def tiny(*overrides):
    return compose_config(["debug=default", "logger.console.quiet=true", *overrides])


@pytest.mark.parametrize("overrides, message", [
    (["env=gym::CartPole-v1", "env.backend=envpool"], "contradicts"),
    (["env.num_threads=0"], "env.num_threads=0"),
    (["env=CartPole-v1", "env.backend=gymnasium", "env.num_threads=2"],
     "env.num_threads=2 sets EnvPool's threads"),
    (["env=envpool::Hoper-v5"], "EnvPool has no env 'Hoper-v5'; closest: Hopper-v5"),
    (["env=Hopper-v5", "env.backend=envpool", "+env.env_config.ctrl_cost=0.1"],
     "EnvPool's Hopper-v5 takes no option 'ctrl_cost'; closest: ctrl_cost_weight"),
    (["env=Pendulum-v1", "+env.env_config.g=9.0"],  # gymnasium's Pendulum takes g
     "takes no option 'g'.*Fix: one of those, or the bare id with env.backend=gymnasium"),
    (["env=envpool::Pendulum-v1", "+env.env_config.max_episode_steps=-1"],
     r"env_config.max_episode_steps=-1: expected a count >= 1"),
    (["env=envpool::Pendulum-v1", "+env.env_config.max_episode_steps=abc"],
     r"env_config.max_episode_steps='abc': EnvPool's Pendulum-v1 takes a int there"),
    (["env=Hopper-v5", "env.backend=envpool", "+env.env_config.ctrl_cost_weight=high"],
     r"ctrl_cost_weight='high': EnvPool's Hopper-v5 takes a float there \(default 0.001\)"),
    (["env=Humanoid-v5", "+env.env_config.include_cinrt_in_observation=false"],
     "gymnasium's Humanoid-v5 takes no option 'include_cinrt_in_observation'.*Fix: one of "
     "include_cinert_in_observation, include_cvel_in_observation"),
    (["env=Humanoid-v5", "+env.env_config.include_qpos_in_observation=false"],
     "takes no option 'include_qpos_in_observation'"),  # gymnasium always observes qpos
    (["env=Humanoid-v5", "+env.env_config.include_cvel_in_observation=maybe"],
     "include_cvel_in_observation='maybe': expected true or false"),
    (["env=Hopper-v5", "+env.env_config.include_cvel_in_observation=false"],
     "gymnasium's Hopper-v5 takes no option 'include_cvel_in_observation'.*Fix: remove it"),
])
def test_config_errors(tmp_path, overrides, message):
    with pytest.raises(ConfigError, match=message):
        run(tiny(*overrides), run_dir=tmp_path)


def test_envpool_slash_spelling_is_the_prefix():
    assert compose_config(["env=envpool/Pendulum-v1"]).env.id == "envpool::Pendulum-v1"


def rows(run_dir):
    with open(run_dir / "metrics.csv", newline="") as file:
        return [{k: v for k, v in row.items() if not k.endswith(("_s", "_per_s"))}
                for row in csv.DictReader(file)]


def test_auto_run_is_saved_with_its_backend_and_resumes_bit_for_bit(tmp_path, caplog):
    common = ["env=Pendulum-v1", "problem.observation_normalization=true",
              "problem.num_episodes=2", "problem.max_num_envs=3", "checkpoint_every=2"]
    straight = tmp_path / "straight"
    with caplog.at_level(logging.INFO, logger="neurorun"):
        run(tiny(*common, "generations=4"), run_dir=straight)
    assert "env Pendulum-v1 runs on envpool" in caplog.text
    saved = (straight / ".hydra" / "config.yaml").read_text()
    assert "backend: envpool" in saved
    cut = tmp_path / "cut"
    run(tiny(*common, "generations=2"), run_dir=cut)
    from neurorun.config.resume import load_run_config

    resumed = load_run_config(cut, ["generations=4"])
    assert resumed.env.backend == "envpool"
    run(resumed, run_dir=cut)
    assert rows(cut) == rows(straight)


def test_threads_do_not_change_results(tmp_path):
    fitness = []
    for threads in (1, 2):
        problem = make_problem("envpool::Hopper-v5", "Linear(obs_length, act_length)",
                               num_episodes=2, max_num_envs=5, num_threads=threads, seed=0)
        params = 0.3 * torch.randn(8, problem.solution_length,
                                   generator=torch.Generator().manual_seed(0))
        fitness.append(problem.evaluate(params, seed=3))
        problem.close()
    assert torch.equal(fitness[0], fitness[1])


def test_eval_of_an_envpool_run_reproduces_its_center_evaluation(tmp_path):
    run(tiny("env=Pendulum-v1", "env.backend=envpool", "generations=2"), run_dir=tmp_path)
    import json

    meta = json.loads((tmp_path / "checkpoints" / "best.json").read_text())
    assert meta["env"] == "envpool::Pendulum-v1"
    # debug=default: two seeded test episodes per center evaluation
    summary = evaluate(str(tmp_path), episodes=2, seed=derive_seed(0, "evaluation"))
    assert summary["return_mean"] == pytest.approx(meta["score"], rel=1e-6)


def test_a_run_without_some_observation_parts_saves_and_replays_them(tmp_path):
    run(tiny("env=Humanoid-v5", *(f"+env.env_config.{key}=false" for key in HUMANOID_LEAN),
             "generations=2"), run_dir=tmp_path)
    import json

    meta = json.loads((tmp_path / "checkpoints" / "best.json").read_text())
    assert meta["env"] == "envpool::Humanoid-v5" and meta["obs_length"] == 140
    assert meta["env_config"] == HUMANOID_LEAN
    summary = evaluate(str(tmp_path), episodes=2, seed=derive_seed(0, "evaluation"))
    assert summary["return_mean"] == pytest.approx(meta["score"], rel=1e-6)


def test_a_simulator_exception_names_the_env_and_the_solutions(monkeypatch):
    import neurorun.envs.envpool_env as module
    from neurorun.problems import EvaluationError

    real = module.make_pool

    class Exploding:  # an EnvPool whose C++ step throws (pybind11 raises RuntimeError)
        def __init__(self, pool):
            self.pool = pool

        def __getattr__(self, name):
            return getattr(self.pool, name)

        def step(self, *args):
            raise RuntimeError("simulation unstable")

    monkeypatch.setattr(module, "make_pool", lambda *a, **k: Exploding(real(*a, **k)))
    problem = make_problem("envpool::Hopper-v5", "Linear(obs_length, act_length)", seed=0)
    with pytest.warns(UserWarning, match="retrying on a fresh env"), \
            pytest.raises(EvaluationError, match=r"'envpool::Hopper-v5' failed twice while "
                          r"evaluating one of solutions 0\.\.2 .*simulation unstable"):
        problem.evaluate(torch.zeros(3, problem.solution_length), seed=0)
