"""brax backend: name errors, next-step autoreset, one compilation per env object."""

import pytest
import torch

from neurorun.envs import make_env
from neurorun.envs.base import UnknownEnvError

pytestmark = pytest.mark.extras("jax")


def test_unknown_brax_name_lists_close_names():
    with pytest.raises(UnknownEnvError, match="inverted_pendulum"):
        make_env("brax::invertedpendulum", 2)


@pytest.mark.slow
def test_inverted_pendulum_next_step_autoreset_and_single_compile():
    env = make_env("brax::inverted_pendulum", 3, seed=0, episode_length=4)
    assert env.single_observation_space.shape == (4,)
    assert env.single_action_space.shape == (1,)
    obs = env.reset(seed=1)
    assert obs.shape == (3, 4) and obs.dtype == torch.float32
    rewards, dones = [], []
    for _ in range(6):
        _, reward, done = env.step(torch.zeros(3, 1))  # a still pole: no early termination
        rewards.append(reward.tolist())
        dones.append(done.tolist())
    assert dones == [[False] * 3] * 3 + [[True] * 3] + [[False] * 3] * 2
    assert rewards[4] == [0.0] * 3  # the reset step
    assert rewards[0] == [1.0] * 3 and rewards[5] == [1.0] * 3
    # resets with new seeds and many steps reuse the compiled functions
    env.reset(seed=2)
    for _ in range(10):
        env.step(torch.rand(3, 1) * 4 - 2)  # out-of-bounds actions are clipped by brax
    assert env._jax_step._cache_size() == 1 and env._jax_reset._cache_size() == 1


@pytest.mark.parametrize(("env_config", "limit", "expected"), [
    ({}, None, 1000),  # brax.envs.create's default
    ({"episode_length": 30}, None, 30), ({"episode_length": 30}, 7, 7), ({}, 2000, 1000),
    ({"episode_length": 5}, 9, 5)])
def test_an_episode_ends_at_the_earlier_of_the_config_and_the_limit(env_config, limit, expected):
    from neurorun.envs.brax_env import brax_episode_length
    assert brax_episode_length(env_config, limit) == expected


@pytest.mark.parametrize(("env_config", "limit", "steps"), [
    ({"episode_length": 50}, 3, 3), ({"episode_length": 2}, 3, 2)])
def test_a_single_env_ends_its_episode_at_the_earlier_length(env_config, limit, steps):
    import jax

    from neurorun.envs.brax_env import single_brax_env
    env = single_brax_env("inverted_pendulum", env_config, limit)
    state = env.reset(jax.random.PRNGKey(0))
    dones = []
    for _ in range(steps):
        state = env.step(state, jax.numpy.zeros(1))  # a still pole: no early termination
        dones.append(float(state.done))
    assert dones == [0.0] * (steps - 1) + [1.0]


@pytest.mark.parametrize("spec", ["brax::inverted_pendulum",
                                  pytest.param("playground::CartpoleBalance",
                                               marks=pytest.mark.extras("playground"))])
def test_env_config_may_give_an_episode_length_beside_neurorun_s_limit(spec):
    """`env.env_config.episode_length=50` was a TypeError (two values for episode_length)
    on the way from the problem to the env: the limit is passed by position."""
    from neurorun.envs import batched_jax_env

    env = batched_jax_env(spec, 7, episode_length=5)
    assert env.env.episode_length == 5  # brax's EpisodeWrapper (Playground's alike)
