"""brax end to end on CPU: inverted_pendulum pays 1 per step, so returns equal lengths."""

import pytest
import torch

from neurorun.problems import make_problem

pytestmark = pytest.mark.extras("jax")


@pytest.mark.slow
def test_brax_inverted_pendulum_evaluates_without_recompiling():
    problem = make_problem("brax::inverted_pendulum", "Linear(obs_length, act_length)",
                           episode_length=30, num_episodes=2, observation_normalization=True,
                           seed=0)
    params = torch.randn(4, problem.solution_length, generator=torch.Generator().manual_seed(0))
    fitness = problem.evaluate(params)
    stats = problem.last_stats
    assert stats.num_episodes == 8 == problem.episode_count
    assert stats.episode_length_min >= 1 and stats.episode_length_max <= 30
    # reward 1 per step: total fitness x episodes == interactions == obs-stats count
    assert float(fitness.sum()) * 2 == problem.interaction_count == float(problem.obs_stats.count)
    assert ((fitness >= 1) & (fitness <= 30)).all()
    problem.evaluate(params[:3])  # a smaller population reuses the env (padding)
    counts = problem.interaction_count, problem.episode_count
    returns, _ = problem.test_episodes(params[0], 2, seed=5)
    torch.testing.assert_close(problem.test_episodes(params[0], 2, seed=5)[0], returns)
    assert ((returns >= 1) & (returns <= 30)).all()
    assert (problem.interaction_count, problem.episode_count) == counts
    env = problem.host.envs.made("eval")
    assert env._jax_step._cache_size() == 1
