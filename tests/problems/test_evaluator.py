"""EvaluationStats: one evaluation's figures, and those of several merged (by hand)."""

import math

import pytest
import torch

from neurorun.problems import EvaluationStats


def test_figures_of_the_finished_episodes():
    stats = EvaluationStats.of_episodes(torch.tensor([1.0, -2.0, 4.0], dtype=torch.float64),
                                        torch.tensor([3.0, 5.0, 10.0], dtype=torch.float64),
                                        num_interactions=18, num_episodes=3)
    assert (stats.episode_return_min, stats.episode_return_max) == (-2.0, 4.0)
    assert stats.episode_return_mean == pytest.approx(1.0)
    assert stats.episode_length_mean == pytest.approx(6.0)
    assert (stats.num_interactions, stats.num_episodes) == (18, 3)
    none = EvaluationStats.of_episodes(torch.zeros(0), torch.zeros(0), num_interactions=4)
    assert all(math.isnan(v) for v in none.episode_figures().values())


def test_merge_by_hand():
    a = EvaluationStats(num_interactions=10, num_episodes=2, num_vector_steps=6,
                        episode_return_min=1.0, episode_return_mean=2.0, episode_return_max=3.0,
                        episode_length_min=4.0, episode_length_mean=5.0, episode_length_max=6.0,
                        eval_time_s=0.5, num_subbatches=1)
    b = EvaluationStats(num_interactions=5, num_episodes=1, nonfinite_count=1,
                        num_vector_steps=5, episode_return_min=8.0, episode_return_mean=8.0,
                        episode_return_max=8.0, episode_length_min=5.0,
                        episode_length_mean=5.0, episode_length_max=5.0, eval_time_s=0.25,
                        num_subbatches=1)
    merged = EvaluationStats.merge([a, b])
    assert merged.num_interactions == 15 and merged.num_episodes == 3
    assert merged.nonfinite_count == 1 and merged.num_vector_steps == 11
    assert (merged.num_subbatches, merged.eval_time_s) == (2, 0.75)
    assert merged.episode_return_mean == pytest.approx((2 * 2 + 8) / 3)
    assert (merged.episode_return_min, merged.episode_return_max) == (1.0, 8.0)
    assert merged.episode_length_mean == pytest.approx((2 * 5 + 5) / 3)
    assert set(merged.episode_figures()) == {
        f"episode_{k}_{s}" for k in ("return", "length") for s in ("min", "mean", "max")}
    # an evaluation with no finished episode leaves the episode figures undefined
    empty = EvaluationStats.merge([EvaluationStats(num_interactions=3, episode_return_min=1.0)])
    assert all(math.isnan(v) for v in empty.episode_figures().values())
