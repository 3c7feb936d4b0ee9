"""GymVecEnv's numpy interface (``reset_arrays``/``step_arrays``) against gymnasium itself."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch

from neurorun.envs import make_env


def test_arrays_equal_gymnasium_and_the_tensor_interface():
    env, twin = make_env("Pendulum-v1", 3), make_env("Pendulum-v1", 3)
    reference = gym.make_vec("Pendulum-v1", num_envs=3, vectorization_mode="sync")
    assert env.host_arrays
    obs = env.reset_arrays(seed=5)
    np.testing.assert_array_equal(obs, reference.reset(seed=5)[0])
    np.testing.assert_array_equal(twin.reset(seed=5).numpy(), obs)
    rng = np.random.default_rng(0)
    for _ in range(4):
        actions = rng.uniform(-3, 3, size=(3, 1)).astype(np.float32)  # beyond the bounds
        obs, reward, done = env.step_arrays(actions)
        ref_obs, ref_reward, terminated, truncated, _ = reference.step(np.clip(actions, -2, 2))
        assert isinstance(obs, np.ndarray) and obs.dtype == np.float32
        np.testing.assert_allclose(obs, ref_obs, rtol=1e-6)
        np.testing.assert_allclose(reward, ref_reward, rtol=1e-6)
        np.testing.assert_array_equal(done, terminated | truncated)
        tensors = twin.step(torch.from_numpy(actions))
        for array, tensor in zip((obs, reward, done), tensors, strict=True):
            np.testing.assert_array_equal(tensor.numpy(), array)
    for e in (env, twin, reference):
        e.close()


def test_discrete_arrays_take_the_argmax():
    env = make_env("CartPole-v1", 2)
    reference = gym.make_vec("CartPole-v1", num_envs=2, vectorization_mode="vector_entry_point")
    env.reset_arrays(seed=1)
    reference.reset(seed=1)
    scores = np.array([[0.2, 0.9], [0.7, -1.0]], dtype=np.float32)  # argmax: 1, 0
    obs, _, _ = env.step_arrays(scores)
    np.testing.assert_array_equal(obs, reference.step(np.array([1, 0]))[0])
    env.close()
    reference.close()
