"""Policy export: to_policy wraps the bare network with obs normalization and action clipping."""

import pickle
import subprocess
import sys

import gymnasium as gym
import numpy as np
import torch

from neurorun.nets import vector_to_module
from neurorun.problems import make_problem

NETWORK = "Linear(obs_length, 8) >> Tanh() >> Linear(8, act_length)"


def trained_problem(env_id="Pendulum-v1"):
    problem = make_problem(env_id, NETWORK, observation_normalization=True,
                           vectorization="sync", seed=0)
    problem.evaluate(torch.randn(3, problem.solution_length,
                                 generator=torch.Generator().manual_seed(0)))
    return problem


def test_to_policy_on_raw_obs_equals_the_network_on_normalized_clipped():
    problem = trained_problem()
    solution = 3.0 * torch.randn(problem.solution_length,
                                 generator=torch.Generator().manual_seed(2))
    raw = torch.randn(50, 3, generator=torch.Generator().manual_seed(3)) * 4.0
    stats = problem.obs_stats
    count = float(stats.count)
    mean = (stats.sum / count).float()
    stdev = torch.sqrt(torch.clamp(stats.sum_of_squares / count - (stats.sum / count) ** 2,
                                   min=1e-2)).float()
    with torch.no_grad():
        net = vector_to_module(problem.network, solution)
        expected = torch.clamp(net((raw - mean) / stdev), -2.0, 2.0)
        got = problem.to_policy(solution)(raw)
    torch.testing.assert_close(got, expected)
    assert (expected.abs() == 2.0).any()  # the clipping was exercised


def test_discrete_policy_act_returns_argmax():
    problem = make_problem("CartPole-v1", "Linear(obs_length, act_length)", seed=0)
    solution = torch.tensor([1.0, 0.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    policy = problem.to_policy(solution)
    assert policy.act(np.array([0.5, 0, 0, 0], dtype=np.float32)) == 0
    assert policy.act(np.array([-0.5, 0, 0, 0], dtype=np.float32)) == 1


SCRIPT = """
import pickle, sys
import gymnasium as gym
data = pickle.load(open(sys.argv[1], "rb"))
env = gym.make(data["env"])
obs, _ = env.reset(seed=5)
total = 0.0
for _ in range(20):
    obs, reward, terminated, truncated, _ = env.step(data["policy"].act(obs))
    total += float(reward)
print(repr(total), data["architecture"], data["interaction_count"])
"""


def test_pickle_round_trip_in_a_fresh_process(tmp_path):
    problem = trained_problem()
    solution = torch.randn(problem.solution_length, generator=torch.Generator().manual_seed(4))
    path = tmp_path / "best.pkl"
    problem.save_solution(solution, path)
    with open(path, "rb") as file:
        data = pickle.load(file)
    assert set(data) == {"solution", "policy", "obs_mean", "obs_stdev", "obs_sum",
                         "obs_sum_of_squares", "interaction_count", "episode_count", "time",
                         "env", "architecture"}
    torch.testing.assert_close(data["solution"], solution)
    np.testing.assert_allclose(data["obs_sum"].numpy(), problem.obs_stats.sum.numpy())
    env = gym.make("Pendulum-v1")
    obs, _ = env.reset(seed=5)
    policy = problem.to_policy(solution)
    total = 0.0
    for _ in range(20):
        obs, reward, *_ = env.step(policy.act(obs))
        total += float(reward)
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(path)], capture_output=True,
                         text=True, check=True, timeout=120)
    value, architecture, interactions = out.stdout.split()[0], out.stdout.split()[1:-1], \
        out.stdout.split()[-1]
    assert float(value) == total
    assert " ".join(architecture) == NETWORK
    assert int(interactions) == problem.interaction_count
