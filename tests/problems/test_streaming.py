"""Streaming evaluation: the work queue of (solution, episode) pairs on a backend, by hand."""

import numpy as np
import pytest
import torch

from neurorun.problems import make_problem

from .toy_env import TOY_ID, episode_lengths


def toy(**options):
    return make_problem(TOY_ID, "Linear(obs_length, act_length)", env_config={"length": 4},
                        seed=0, **options)


@pytest.mark.parametrize("streaming", [True, False])
def test_queue_on_a_backend_that_steps_every_env(streaming):
    """AsyncVectorEnv steps all its envs and cannot seed later episodes: by hand, 4 solutions
    on 2 slots, reward 1 per step. A seeded reset (seed s) gives 4 + s % 3 steps, an
    unseeded autoreset one step more than the slot's previous episode."""
    problem = toy(vectorization="async", max_num_envs=2, streaming=streaming)
    fitness = problem.evaluate(torch.zeros(4, problem.solution_length), seed=0)
    stats = problem.last_stats
    if streaming:
        # slot 0: pair 0 (seed 0, 4 steps, ends at step 4), autoreset at 5, pair 2 (5 steps:
        # 6..10); slot 1: pair 1 (seed 1, 5 steps), autoreset at 6, pair 3 (6 steps: 7..12)
        assert fitness.tolist() == [4, 5, 5, 6]
        assert stats.num_vector_steps == 12 and stats.num_simulated_steps == 24
    else:
        # sub-batch 1: seeds 0, 1 (4 and 5 steps); sub-batch 2: seeds 2, 3 (6 and 4 steps)
        assert fitness.tolist() == [4, 5, 6, 4]
        assert stats.num_vector_steps == 5 + 6 and stats.num_simulated_steps == 22
    assert stats.num_interactions == sum(fitness.tolist())
    problem.close()


@pytest.mark.parametrize("max_num_envs", [1, 2, 5, 12])
def test_seeded_episodes_do_not_depend_on_slots_or_finishing_order(max_num_envs):
    problem = toy(vectorization="sync", num_episodes=3, max_num_envs=max_num_envs)
    biases = torch.tensor([[0.0, 0.0, b] for b in (0.5, -0.5, 0.0, 1.0)])
    fitness = problem.evaluate(biases, seed=7)
    expected = [(1 + b) * sum(episode_lengths(7, j, 4, 3)) / 3
                for j, b in enumerate((0.5, -0.5, 0.0, 1.0))]
    np.testing.assert_allclose(fitness.numpy(), expected)
    assert problem.last_stats.num_episodes == 12
    problem.close()


def test_streaming_on_and_off_agree_where_episodes_are_seeded():
    results = []
    for streaming in (True, False):
        problem = make_problem("Pendulum-v1", "Linear(obs_length, 8) >> Tanh() >> "
                               "Linear(8, act_length)", num_episodes=2, max_num_envs=3,
                               vectorization="sync", observation_normalization=True,
                               streaming=streaming, seed=0)
        params = torch.randn(7, problem.solution_length,
                             generator=torch.Generator().manual_seed(2))
        results.append((problem.evaluate(params, seed=5), problem.obs_stats.mean.clone(),
                        problem.interaction_count))
        problem.close()
    (fit_a, mean_a, count_a), (fit_b, mean_b, count_b) = results
    torch.testing.assert_close(fit_a, fit_b, rtol=1e-6, atol=1e-6)
    assert count_a == count_b == 7 * 2 * 200
    torch.testing.assert_close(mean_a, mean_b, rtol=1e-9, atol=1e-9)


def test_a_nan_terminal_observation_does_not_fail_the_slots_next_solution():
    # seed 30 (30 % 3 == 0): a 2-step episode whose terminal observation is NaN; the slot then
    # runs solution 1 (seed 31: 3 steps), which must score normally
    problem = make_problem(TOY_ID, "Linear(obs_length, act_length)", vectorization="sync",
                           env_config={"length": 2, "nan_obs_seed": 30}, max_num_envs=1,
                           seed=0)
    fitness = problem.evaluate(torch.zeros(2, problem.solution_length), seed=30)
    assert fitness.tolist() == [2.0, 3.0]
    assert problem.last_stats.nonfinite_count == 0
    problem.close()


def test_without_max_num_envs_a_host_env_has_at_most_host_slots(monkeypatch):
    """max_num_envs=null: one slot per pair, up to HOST_SLOTS (here 3 of 4 x 2 pairs); the
    fitness is still the seeded one, computed by hand."""
    from neurorun.problems import evaluation

    monkeypatch.setattr(evaluation, "HOST_SLOTS", 3)
    problem = toy(vectorization="sync", num_episodes=2)
    biases = torch.tensor([[0.0, 0.0, b] for b in (0.5, -0.5, 0.0, 1.0)])
    fitness = problem.evaluate(biases, seed=7)
    expected = [(1 + b) * sum(episode_lengths(7, j, 4, 2)) / 2
                for j, b in enumerate((0.5, -0.5, 0.0, 1.0))]
    np.testing.assert_allclose(fitness.numpy(), expected)
    assert problem.host.envs.made("eval").num_envs == 3
    problem.close()
