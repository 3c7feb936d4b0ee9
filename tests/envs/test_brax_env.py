"""brax backend: name errors, next-step autoreset, one compilation per env object."""

import pytest
import torch

from neurorun.envs import UnknownEnvError, make_env

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
