"""make_env: spec parsing, errors, action conversion and the next-step autoreset contract."""

import os
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from neurorun.envs import gym_env, make_env, parse_spec
from neurorun.envs.base import EnvStepError, UnknownEnvError
from neurorun.envs.gym_env import MujocoGLError, limited_episode_steps


@pytest.mark.parametrize("spec, expected", [
    ("CartPole-v1", ("gym", "CartPole-v1")),
    ("gym::Humanoid-v5", ("gym", "Humanoid-v5")),
    ("brax::humanoid", ("brax", "humanoid")),
    ("my_pkg.envs:make_vec", ("factory", "my_pkg.envs:make_vec")),
    ("ALE/Pong-v5", ("gym", "ALE/Pong-v5")),
])
def test_parse_spec(spec, expected):
    assert parse_spec(spec) == expected


def test_unknown_backend_and_empty_spec():
    with pytest.raises(ValueError, match="unknown backend 'mujoco'"):
        parse_spec("mujoco::Ant")
    with pytest.raises(ValueError, match="env spec"):
        parse_spec("")


def test_unknown_gym_id_names_close_ids():
    with pytest.raises(UnknownEnvError) as info:
        make_env("HalfCheetah-v9", 2)
    assert "'HalfCheetah-v9'" in str(info.value) and "HalfCheetah-v5" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_non_box_observation_space_is_refused():
    with pytest.raises(TypeError, match="Box observation space"):
        make_env("FrozenLake-v1", 2)


def test_native_vectorization_is_used_when_gymnasium_has_one():
    env = make_env("CartPole-v1", 3)
    assert type(env.env).__name__ == "CartPoleVectorEnv"
    assert make_env("CartPole-v1", 3, vectorization="sync").env.__class__ is SyncVectorEnv
    with pytest.raises(ValueError, match="gymnasium has no vector env of its own for "
                                         "'Pendulum-v1'"):
        make_env("Pendulum-v1", 2, vectorization="native")
    with pytest.raises(ValueError, match="expected one of auto, native, sync, async"):
        make_env("CartPole-v1", 2, vectorization="threads")


def test_discrete_actions_are_argmax_and_obs_are_float32():
    env = make_env("CartPole-v1", 4, vectorization="sync", seed=3)
    assert env.single_action_space.shape == (2,) and env.env_action_space == gym.spaces.Discrete(2)
    obs = env.reset(seed=3)
    assert obs.dtype == torch.float32 and obs.shape == (4, 4)
    outputs = torch.tensor([[0.0, 1.0], [1.0, 0.0], [-5.0, -4.0], [2.0, 2.5]])
    new_obs, reward, done = env.step(outputs)
    # the same actions (argmax per row) on plain envs seeded 3 + i
    for i, action in enumerate([1, 0, 1, 1]):
        single = gym.make("CartPole-v1")
        single.reset(seed=3 + i)
        expected, *_ = single.step(action)
        np.testing.assert_allclose(new_obs[i].numpy(), expected)
    assert reward.tolist() == [1.0] * 4 and not done.any()


def test_box_actions_are_clipped_to_bounds():
    env = make_env("Pendulum-v1", 2, vectorization="sync", seed=0)
    reference = make_env("Pendulum-v1", 2, vectorization="sync", seed=0)
    obs_far, _, _ = env.step(torch.tensor([[50.0], [-50.0]]))
    obs_bound, _, _ = reference.step(torch.tensor([[2.0], [-2.0]]))
    torch.testing.assert_close(obs_far, obs_bound)


def test_next_step_autoreset_and_episode_length():
    env = make_env("Pendulum-v1", 2, vectorization="sync", seed=0, episode_length=3)
    dones, rewards = [], []
    for _ in range(5):
        _, reward, done = env.step(torch.zeros(2, 1))
        dones.append(done.tolist())
        rewards.append(reward.tolist())
    assert dones == [[False, False], [False, False], [True, True], [False, False],
                     [False, False]]
    assert rewards[3] == [0.0, 0.0]  # the reset step: no reward
    assert all(r < 0 for r in rewards[4])  # stepping again


def steps_to_first_done(env) -> int:
    """Steps until every env of ``env`` (zero actions, Pendulum never ends its own) is done."""
    for step in range(1, 1000):
        _, _, done = env.step(torch.zeros(env.num_envs, 1))
        if done.all():
            return step
    raise AssertionError("no episode ended within 1,000 steps")


@pytest.mark.parametrize(("own", "episode_length", "expected"), [
    (500, 5, 5),  # episode_length cuts an env_config limit, as it cuts the registered one
    (3, 5, 3),    # and never extends it
    (4, None, 4),
])
def test_an_env_config_limit_is_the_envs_own(own, episode_length, expected):
    env = make_env("Pendulum-v1", 2, vectorization="sync", seed=0,
                   episode_length=episode_length, max_episode_steps=own)
    try:
        assert steps_to_first_done(env) == expected
    finally:
        env.close()


@pytest.mark.parametrize("steps", [-1, 0, 2.5, True])
def test_an_env_config_limit_that_is_not_a_count_is_refused(steps):
    """gymnasium reads -1 as no limit: Pendulum's generation never ended."""
    from neurorun.envs.gym_env import gym_spaces

    with pytest.raises(ValueError, match=rf"^env_config.max_episode_steps={steps!r}: expected "
                                         r"a count >= 1\. Fix: "):
        gym_spaces("Pendulum-v1", max_episode_steps=steps)


def test_episode_length_never_extends_the_env_limit():
    assert limited_episode_steps(500, None) == 500
    assert limited_episode_steps(500, 100) == 100
    assert limited_episode_steps(500, 1000) == 500
    assert limited_episode_steps(None, 7) == 7


class _Exploding(gym.Env):
    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def __init__(self, explode=False):
        self.explode = explode

    def reset(self, *, seed=None, options=None):
        return np.zeros(1, np.float32), {}

    def step(self, action):
        if self.explode:
            raise FloatingPointError("boom")
        return np.zeros(1, np.float32), 0.0, False, False, {}


def make_exploding(num_envs, bad=2):
    return SyncVectorEnv([lambda i=i: _Exploding(i == bad) for i in range(num_envs)])


def make_same_step(num_envs):
    return SyncVectorEnv([_Exploding for _ in range(num_envs)],
                         autoreset_mode=AutoresetMode.SAME_STEP)


def make_not_vector(num_envs):
    return _Exploding()


class _WrongObs(_Exploding):
    def reset(self, *, seed=None, options=None):
        return np.zeros(3, np.float32), {}  # its observation_space says (1,)


class _WidensOnStep(SyncVectorEnv):  # a user's vector env whose steps return the wrong shape
    def step(self, actions):
        obs, *rest = super().step(actions)
        return (np.zeros((self.num_envs, 4), np.float32), *rest)


def make_wrong_obs(num_envs):
    return SyncVectorEnv([_WrongObs for _ in range(num_envs)])


def make_widens_on_step(num_envs):
    return _WidensOnStep([_Exploding for _ in range(num_envs)])


def test_a_factory_with_the_wrong_observation_shape_says_which_and_both_shapes():
    """The message names the factory's shape and the space's."""
    with pytest.raises(ValueError, match=rf"env '{__name__}:make_wrong_obs': observations of "
                                         r"shape \(3,\).*observation_space says \(1,\).*Fix:"):
        make_env(f"{__name__}:make_wrong_obs", 2)
    env = make_env(f"{__name__}:make_widens_on_step", 2)
    with pytest.raises(ValueError, match=r"shape \(4,\).*says \(1,\)"):
        env.step(torch.zeros(2, 1))


def test_factory_env_and_failing_step_names_the_sub_env():
    env = make_env(f"{__name__}:make_exploding", 4)
    with pytest.raises(EnvStepError, match="sub-env 2 raised FloatingPointError: boom") as info:
        env.step(torch.zeros(4, 1))
    assert info.value.env_index == 2


def test_factory_errors():
    with pytest.raises(ValueError, match="autoreset_mode"):
        make_env(f"{__name__}:make_same_step", 2)
    with pytest.raises(TypeError, match="VectorEnv"):
        make_env(f"{__name__}:make_not_vector", 2)
    with pytest.raises(ValueError, match="episode_length"):
        make_env(f"{__name__}:make_exploding", 2, episode_length=5)
    with pytest.raises(ImportError, match="has no attribute 'missing'"):
        make_env(f"{__name__}:missing", 2)


def test_mujoco_warnings_show_once_and_write_no_log(tmp_path):
    # MuJoCo 4.0 warns 'settotalmass is deprecated' for every HalfCheetah it builds; its own
    # handler would print one line per env to stderr and append them to MUJOCO_LOG.TXT.
    code = ("from neurorun.envs.gym_env import make_gym_vector_env\n"
            "make_gym_vector_env('HalfCheetah-v5', 3).close()\n"
            "make_gym_vector_env('HalfCheetah-v5', 2).close()\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=True)
    assert "settotalmass" not in done.stdout
    assert done.stderr.count("settotalmass") == 1
    assert "RuntimeWarning: MuJoCo: compiler attribute 'settotalmass'" in done.stderr
    assert not (tmp_path / "MUJOCO_LOG.TXT").exists()


def _raise_from_opengl():
    """What PyOpenGL raises as MuJoCo imports it where OSMesa is missing, from its own file."""
    code = "raise AttributeError(\"'NoneType' object has no attribute 'glGetError'\")"
    exec(compile(code, "/site-packages/OpenGL/raw/GL/_errors.py", "exec"))


@pytest.mark.parametrize("gl, fix", [
    ("osmesa", "install EGL (a GPU driver or libegl1) or OSMesa (libosmesa6), or unset MUJOCO_GL"),
    ("glx", "unset MUJOCO_GL, or set it to egl or osmesa")])
def test_a_mujoco_gl_that_cannot_load_is_named_with_its_fix(monkeypatch, gl, fix):
    """MUJOCO_GL=osmesa without OSMesa failed a gymnasium MuJoCo run with PyOpenGL's
    AttributeError alone, though a run draws nothing without videos."""
    monkeypatch.setattr(gym_env, "route_mujoco_warnings", _raise_from_opengl)
    monkeypatch.setenv("MUJOCO_GL", gl)
    with pytest.raises(MujocoGLError) as raised:
        gym_env.gym_env_spec("Hopper-v5")
    assert str(raised.value) == (
        f"MuJoCo could not load MUJOCO_GL={gl!r} for gymnasium's Hopper-v5 (AttributeError: "
        f"'NoneType' object has no attribute 'glGetError'). Fix: {fix}")


def test_an_opengl_failure_without_mujoco_gl_and_other_failures_pass_unchanged(monkeypatch):
    monkeypatch.setattr(gym_env, "route_mujoco_warnings", _raise_from_opengl)
    monkeypatch.delenv("MUJOCO_GL", raising=False)
    with pytest.raises(AttributeError, match="glGetError"):
        gym_env.gym_env_spec("Hopper-v5")

    def fails_elsewhere():
        raise ImportError("no module named mujoco")

    monkeypatch.setattr(gym_env, "route_mujoco_warnings", fails_elsewhere)
    monkeypatch.setenv("MUJOCO_GL", "egl")
    with pytest.raises(ImportError, match="no module named mujoco"):
        gym_env.gym_env_spec("Hopper-v5")
    assert gym_env.gym_env_spec("CartPole-v1").id == "CartPole-v1"  # not MuJoCo: not imported


def test_a_run_with_a_mujoco_gl_mujoco_refuses_says_so_in_one_line(tmp_path):
    """MuJoCo's import refuses MUJOCO_GL=bogus: the run said RuntimeError, without the fix."""
    done = subprocess.run(
        [sys.executable, "-m", "neurorun.cli.app", "env=InvertedPendulum-v5",
         "env.backend=gymnasium", "generations=1", "algo.popsize=4", "hydra.run.dir=run"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "MUJOCO_GL": "bogus"})
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        "neurorun: the run failed: MujocoGLError: MuJoCo could not load MUJOCO_GL='bogus' for "
        "gymnasium's InvertedPendulum-v5 (RuntimeError: invalid value for environment variable "
        "MUJOCO_GL: bogus). Fix: unset MUJOCO_GL, or set it to egl or osmesa")
    assert not (tmp_path / "run").exists()


def test_a_keyword_the_env_does_not_take_names_the_fix():
    """gymnasium's TypeError alone said what was wrong, not where it came from."""
    from neurorun.envs.gym_env import gym_spaces

    with pytest.raises(TypeError, match=r"unexpected keyword argument 'gg'.*Fix: only keyword "
                                        r"arguments Pendulum-v1's constructor takes in "
                                        r"env.env_config, or leave them out\.$"):
        gym_spaces("Pendulum-v1", gg=5)
    assert gym_spaces("Pendulum-v1", g=5.0)[1].shape == (1,)  # a keyword it takes
