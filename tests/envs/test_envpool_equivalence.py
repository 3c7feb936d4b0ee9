"""EnvPool and gymnasium give the same task for every id that `env.backend=auto` serves.

Per id: the same observation shape and action bounds, time limit and (where both name one)
option values; and for two fixed policies, one trained on each backend
(tests/envs/make_policies.py), the mean returns over 30 seeded episodes on each backend agree
within 3 standard errors of their difference.
EnvPool bundles its own MuJoCo and Box2D builds, so the episodes themselves differ; what must
agree is the distribution of returns.
"""

import math
from pathlib import Path

import envpool
import gymnasium as gym
import numpy as np
import pytest
import torch

from neurorun.envs.envpool_env import EQUIVALENT_IDS
from neurorun.problems import RunningNorm, make_problem

pytestmark = pytest.mark.extras("envpool")

DATA = Path(__file__).parent / "data"
EPISODES = 30


def gym_env(env_id):
    return gym.make(env_id).unwrapped


@pytest.mark.parametrize("env_id", EQUIVALENT_IDS)
def test_spaces_time_limit_and_options(env_id):
    spec = envpool.make_spec(env_id)
    config = spec.config
    env = gym_env(env_id)
    pool_obs, pool_act = spec.observation_space, spec.action_space
    # observation bounds are only declared (EnvPool's Box2D ones are placeholders); the
    # action bounds clip every action, so they must be equal
    assert pool_obs.shape == env.observation_space.shape
    if isinstance(env.action_space, gym.spaces.Discrete):
        assert int(pool_act.n) == int(env.action_space.n)
    else:
        for ours, theirs in ((pool_act.low, env.action_space.low),
                             (pool_act.high, env.action_space.high)):  # as neurorun clips
            np.testing.assert_array_equal(ours.astype(np.float32), theirs.astype(np.float32))
    assert config.max_episode_steps == gym.spec(env_id).max_episode_steps
    # reward weights, termination rules, frame skip...: every option both sides name alike
    compared = []
    for key in config._fields:
        ours = getattr(env, f"_{key}", getattr(env, key, None))
        if isinstance(ours, bool | int | float):
            assert math.isclose(float(getattr(config, key)), float(ours)), key
            compared.append(key)
    if "mujoco" in str(gym.spec(env_id).entry_point):  # the reward weights were compared
        assert "frame_skip" in compared and len(compared) >= 2, compared
    env.close()


def normalizer(saved):
    """A RunningNorm whose mean and stdev are the saved ones (count 1)."""
    mean = saved["obs_mean"].double()
    stdev = saved["obs_stdev"].double()
    norm = RunningNorm(len(mean))
    norm.update(RunningNorm.from_state_dict({
        "size": len(mean), "min_variance": 0.0, "clip": None, "count": torch.tensor(1.0),
        "sum": mean, "sum_of_squares": mean**2 + stdev**2}))
    return norm


def returns_on(spec, saved, seed):
    problem = make_problem(spec, "Linear(obs_length, act_length)", seed=0,
                           observation_normalization=True)
    problem.set_obs_stats(normalizer(saved))
    result = problem.test_episodes(saved["solution"], EPISODES, seed)[0].double()
    problem.close()
    return result


@pytest.mark.parametrize("trained_on", ["envpool", "gymnasium"])
@pytest.mark.parametrize("env_id", EQUIVALENT_IDS)
def test_a_trained_policy_scores_alike_on_both(env_id, trained_on):
    saved = torch.load(DATA / f"{env_id}__{trained_on}.pt", weights_only=True)
    on_gym = returns_on(f"gym::{env_id}", saved, seed=1000)
    on_pool = returns_on(f"envpool::{env_id}", saved, seed=2000)
    difference = float(on_pool.mean() - on_gym.mean())
    error = math.sqrt(float(on_gym.var() + on_pool.var()) / EPISODES)
    assert abs(difference) <= 3 * error + 1e-9, (
        f"{env_id}: gymnasium {float(on_gym.mean()):.2f} vs EnvPool "
        f"{float(on_pool.mean()):.2f} (standard error of the difference {error:.2f})")
