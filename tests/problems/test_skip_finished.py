"""Envs whose solution has run all its episodes are not simulated any more (sync gymnasium)."""

from __future__ import annotations

from collections import Counter

import gymnasium as gym
import numpy as np
import pytest
import torch

from neurorun.envs import make_env
from neurorun.problems import make_problem

from .toy_env import ToyEnv, episode_lengths

COUNTING_ID = "NeurorunCountingToy-v0"
STEPS: Counter[int] = Counter()  # step calls per env, keyed by the seed of its first reset
AUTORESETS: Counter[int] = Counter()  # resets after the first seeded one, same keys


class CountingToyEnv(ToyEnv):
    first_seed: int | None = None

    def reset(self, *, seed=None, options=None):
        # gymnasium's checks reset new envs without a seed: those do not count
        if self.first_seed is not None:
            AUTORESETS[self.first_seed] += 1
        elif seed is not None:
            self.first_seed = seed
        return super().reset(seed=seed, options=options)

    def step(self, action):
        STEPS[self.first_seed] += 1
        return super().step(action)


if COUNTING_ID not in gym.registry:
    gym.register(COUNTING_ID, entry_point=CountingToyEnv)


def test_envs_left_out_are_not_stepped_and_keep_their_state():
    STEPS.clear()
    AUTORESETS.clear()
    env = make_env(COUNTING_ID, 2, vectorization="sync", length=2)  # seeds 0, 1: 2 and 3 steps
    assert env.skips_inactive
    env.reset_arrays(seed=0)
    zeros = np.zeros((2, 1), dtype=np.float32)  # reward 1 per step
    obs, reward, done = env.step_arrays(zeros, np.array([True, False]))
    np.testing.assert_array_equal(obs, [[1, 0], [0, 1]])  # env 1: still its first observation
    np.testing.assert_array_equal(reward, [1, 0])
    np.testing.assert_array_equal(done, [False, False])
    obs, reward, done = env.step_arrays(zeros)  # env 0 ends its episode, env 1 goes on
    np.testing.assert_array_equal(obs, [[2, 0], [1, 1]])
    np.testing.assert_array_equal(done, [True, False])
    obs, reward, done = env.step_arrays(zeros, np.array([False, True]))
    np.testing.assert_array_equal(obs, [[2, 0], [2, 1]])  # env 0 keeps its final observation
    np.testing.assert_array_equal(done, [False, False])
    assert (STEPS[0], STEPS[1], AUTORESETS[0]) == (2, 2, 0)
    obs, reward, done = env.step_arrays(zeros, np.array([True, False]))
    np.testing.assert_array_equal(obs, [[0, 0], [2, 1]])  # the pending autoreset, done now
    np.testing.assert_array_equal(reward, [0, 0])
    assert (STEPS[0], AUTORESETS[0]) == (2, 1)
    env.close()


@pytest.mark.parametrize("streaming", [True, False])
def test_evaluation_steps_each_env_only_for_its_own_episodes(streaming):
    STEPS.clear()
    AUTORESETS.clear()
    problem = make_problem(COUNTING_ID, "Linear(obs_length, act_length)", vectorization="sync",
                           env_config={"length": 4}, num_episodes=2, seed=0,
                           streaming=streaming)
    params = torch.zeros(3, problem.solution_length)  # action 0: reward 1 per step
    fitness = problem.evaluate(params, seed=0)
    # episode e of solution j is seeded j + e * 2**20: lengths [4, 5], [5, 6], [6, 4]
    lengths = [episode_lengths(0, j, 4, 2) for j in range(3)]
    assert lengths == [[4, 5], [5, 6], [6, 4]]
    if streaming:  # slot 0 ends first (step 4) and takes pair 3, slot 1 pair 4, slot 2 pair 5
        assert [STEPS[j] for j in range(3)] == [4 + 5, 5 + 6, 6 + 4]
    else:  # slot j runs solution j's two episodes
        assert [STEPS[j] for j in range(3)] == [sum(ls) for ls in lengths]
    assert [AUTORESETS[j] for j in range(3)] == [1, 1, 1]  # before each slot's second episode
    np.testing.assert_allclose(fitness.numpy(), [sum(ls) / 2 for ls in lengths])
    assert problem.last_stats.num_interactions == 30
    # every simulated step counted, plus the three autoresets
    assert problem.last_stats.num_simulated_steps == 33
    problem.close()
