"""The batched evaluator gives the returns of a plain gymnasium loop running each policy alone.

Seeds (Problem docstring): with sync vectorization episode e of solution j is reset with
seed base + j + e * 2**20.
"""

import gymnasium as gym
import numpy as np
import pytest
import torch

from neurorun.nets import vector_to_module
from neurorun.problems import make_problem

BASE = 123


def plain_loop(env_id, net, seed, num_episodes, discrete):
    env = gym.make(env_id)
    total = 0.0
    for episode in range(num_episodes):
        obs, _ = env.reset(seed=seed + episode * (1 << 20))
        done = False
        while not done:
            with torch.no_grad():
                out = net(torch.as_tensor(obs, dtype=torch.float32)).numpy()
            action = int(np.argmax(out)) if discrete else np.clip(
                out, env.action_space.low, env.action_space.high)
            obs, reward, terminated, truncated, _ = env.step(action)
            total += float(reward)
            done = terminated or truncated
    env.close()
    return total / num_episodes


@pytest.mark.parametrize("env_id, discrete, scale", [("CartPole-v1", True, 1.0),
                                                     ("Pendulum-v1", False, 0.5)])
@pytest.mark.parametrize("max_num_envs", [None, 2])
def test_batched_equals_single_policy_loops(env_id, discrete, scale, max_num_envs):
    problem = make_problem(env_id, "Linear(obs_length, 8) >> Tanh() >> Linear(8, act_length)",
                           num_episodes=2, vectorization="sync", max_num_envs=max_num_envs,
                           seed=0)
    params = scale * torch.randn(5, problem.solution_length,
                                 generator=torch.Generator().manual_seed(1))
    fitness = problem.evaluate(params, seed=BASE)
    net = problem.network
    expected = [plain_loop(env_id, vector_to_module(net, params[j]), BASE + j, 2, discrete)
                for j in range(5)]
    np.testing.assert_allclose(fitness.numpy(), expected, rtol=1e-4)


def test_test_episodes_equal_seeded_single_loops():
    problem = make_problem("Pendulum-v1", "Linear(obs_length, act_length)",
                           vectorization="sync", seed=0)
    solution = torch.tensor([0.5, -0.3, 0.2, 0.1])
    returns, _ = problem.test_episodes(solution, 3, seed=40)
    net = vector_to_module(problem.network, solution)
    expected = [plain_loop("Pendulum-v1", net, 40 + k, 1, False)
                for k in range(3)]
    np.testing.assert_allclose(returns.numpy(), expected, rtol=1e-4)


def recurrent_loop(env_id, net, seed, num_episodes):
    env = gym.make(env_id)
    total = 0.0
    for episode in range(num_episodes):
        obs, _ = env.reset(seed=seed + episode * (1 << 20))
        hidden, done = None, False  # each episode starts from a zero state
        while not done:
            with torch.no_grad():
                x = torch.as_tensor(obs, dtype=torch.float32)
                out, hidden = net(x) if hidden is None else net(x, hidden)
            obs, reward, terminated, truncated, _ = env.step(int(np.argmax(out.numpy())))
            total += float(reward)
            done = terminated or truncated
    return total / num_episodes


def test_recurrent_policies_restart_their_state_each_episode():
    problem = make_problem("CartPole-v1", "RNN(obs_length, 6) >> Linear(6, act_length)",
                           num_episodes=3, vectorization="sync", seed=0)
    params = torch.randn(4, problem.solution_length, generator=torch.Generator().manual_seed(5))
    fitness = problem.evaluate(params, seed=BASE)
    net = problem.network
    expected = [recurrent_loop("CartPole-v1", vector_to_module(net, params[j]), BASE + j, 3)
                for j in range(4)]
    np.testing.assert_allclose(fitness.numpy(), expected, rtol=1e-5)
