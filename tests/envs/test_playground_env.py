"""MuJoCo Playground backend: names, config checks, and stepping against a direct loop."""

import jax
import numpy as np
import pytest
import torch

from neurorun.envs import make_env
from neurorun.envs.base import UnknownEnvError

pytestmark = pytest.mark.extras("playground")


def test_unknown_name_lists_close_names():
    with pytest.raises(UnknownEnvError, match="closest: CheetahRun"):
        make_env("playground::CheetaRun", 2)


def test_robot_task_without_its_models_says_what_is_missing(monkeypatch, tmp_path):
    from mujoco_playground._src import mjx_env

    monkeypatch.setattr(mjx_env, "MENAGERIE_PATH", tmp_path / "absent")
    with pytest.raises(UnknownEnvError) as caught:
        make_env("playground::Go1JoystickFlatTerrain", 2)
    message = str(caught.value)
    assert "MuJoCo Menagerie" in message and str(tmp_path / "absent") in message
    assert "machine with internet" in message and "\n" not in message


def test_unknown_config_key_and_implementation_are_refused_before_compiling():
    with pytest.raises(ValueError, match=r"env\.env_config\.episode_lenght.*closest: "
                                         r"episode_length"):
        make_env("playground::CartpoleBalance", 2, episode_lenght=10)
    with pytest.raises(ValueError, match=r"env\.env_config\.impl='cuda'.*jax, warp"):
        make_env("playground::CartpoleBalance", 2, impl="cuda")


@pytest.mark.parametrize(("backend", "warp_installed", "expected"), [
    ("cpu", True, "jax"), ("gpu", True, "default"), ("gpu", False, "jax")])
def test_the_physics_is_playgrounds_default_only_where_warp_runs(monkeypatch, backend,
                                                                  warp_installed, expected):
    """An H200 with no warp-lang failed in put_model ("warp-lang is not installed") where
    neurorun left Playground's default: without Warp the jax physics is picked."""
    import importlib.util

    from mujoco_playground import registry

    from neurorun.envs.playground_env import playground_config

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(jax, "default_backend", lambda: backend)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *rest: (
        None if name == "warp" and not warp_installed else find_spec(name, *rest)))
    default = registry.get_default_config("CheetahRun").impl
    assert default != "jax"  # else the rule has nothing to choose
    picked = playground_config("CheetahRun", {})["impl"]
    assert picked == (default if expected == "default" else "jax")
    assert playground_config("CheetahRun", {"impl": "jax"})["impl"] == "jax"  # as asked


def direct_loop(name, num_envs, seed, actions, episode_length):
    """Playground's own reset/step, one env at a time, with gymnasium's next-step autoreset
    and the keys JaxVecEnv documents: env i's first episode starts from PRNGKey(seed + i),
    each later one from the previous key folded with 1."""
    from mujoco_playground import registry

    env = registry.load(name, config_overrides={"impl": "jax"})
    reset, step = jax.jit(env.reset), jax.jit(env.step)
    # env i's first episode from the key of seed + i, each later one from fold_in(key, 1)
    keys = [jax.random.PRNGKey(seed + i) for i in range(num_envs)]
    states = [reset(k) for k in keys]
    steps, pending = [0] * num_envs, [False] * num_envs
    trace = []
    for action in actions:
        obs, rewards, dones = [], [], []
        for i in range(num_envs):
            if pending[i]:
                keys[i] = jax.random.fold_in(keys[i], 1)
                states[i], steps[i], pending[i] = reset(keys[i]), 0, False
                rewards.append(0.0)
            else:
                states[i] = step(states[i], jax.numpy.asarray(action[i]))
                steps[i] += 1
                pending[i] = bool(states[i].done) or steps[i] >= episode_length
                rewards.append(float(states[i].reward))
            obs.append(np.asarray(states[i].obs))
            dones.append(pending[i])
        trace.append((np.stack(obs), np.array(rewards), dones))
    return trace


def test_steps_match_a_direct_playground_loop_with_next_step_autoreset():
    actions = np.random.default_rng(0).uniform(-1, 1, size=(9, 3, 1)).astype(np.float32)
    env = make_env("playground::CartpoleBalance", 3, seed=0, episode_length=4)
    assert env.single_observation_space.shape == (5,)
    assert env.single_action_space.shape == (1,)
    env.reset(seed=7)
    expected = direct_loop("CartpoleBalance", 3, 7, actions, episode_length=4)
    for t, (action, (obs, reward, done)) in enumerate(zip(actions, expected, strict=True)):
        got_obs, got_reward, got_done = env.step(torch.from_numpy(action))
        np.testing.assert_allclose(got_obs.numpy(), obs, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got_reward.numpy(), reward, rtol=1e-5, atol=1e-6)
        assert got_done.tolist() == done, t
    # an episode is 4 steps, then one reset step: done at steps 4 and 9 (1-based)
    assert [bool(d[0]) for _, _, d in expected] == [False] * 3 + [True] + [False] * 4 + [True]
    env.reset(seed=8)  # new seeds and many steps reuse the compiled functions
    assert env._jax_step._cache_size() == 1 and env._jax_reset._cache_size() == 1


def test_cuda_device_without_a_cuda_jax_is_refused_before_compiling(monkeypatch, tmp_path):
    from neurorun.cli.app import compose_config
    from neurorun.common.errors import ConfigError
    from neurorun.loop.runner import Runner

    if jax.default_backend() != "cpu":
        pytest.skip("this jax has a GPU: the refusal does not apply")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # a CUDA torch, a CPU jax
    cfg = compose_config(["env=playground::CartpoleBalance", "problem.device=cuda"])
    with pytest.raises(ConfigError) as caught:
        Runner(cfg, run_dir=tmp_path / "run")
    message = str(caught.value)
    assert "problem.device='cuda'" in message and "no GPU backend" in message
    assert "Fix:" in message and "\n" not in message
    assert not (tmp_path / "run").exists()
