"""The host loop's parts on the toy env, whose observations are known by hand."""

import pytest

from neurorun.problems import stats_buffer

from . import test_problem


@pytest.mark.parametrize("flush_size", [1, 6, 20])
@pytest.mark.parametrize("check", [
    test_problem.test_obs_stats_cover_exactly_the_observations_acted_on,
    test_problem.test_nonfinite_observation_is_kept_out_of_obs_stats,
])
def test_statistics_gathered_over_many_flushes(monkeypatch, flush_size, check):
    """Observation statistics added in chunks of ``flush_size`` numbers (1: every step, 20:
    every few steps of 3 toy envs' 2 numbers) are those of the observations acted on."""
    monkeypatch.setattr(stats_buffer, "STATS_FLUSH_SIZE", flush_size)
    check()
