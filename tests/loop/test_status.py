"""The stop rules and the stall rule, for both objective senses."""

import math

import pytest

from neurorun.loop.restarts import StallWatch
from neurorun.loop.status import StopLimits
from neurorun.record.metrics import GenerationStatus

ROW = dict(generation=3, popsize=4, mean_eval=1.0, median_eval=1.0, pop_best_eval=2.0,
           best_sample_eval=2.0, center_eval=None, center_eval_length=None,
           nonfinite_center_evals=0, restarts=0,
           total_interaction_count=500, total_episode_count=4, stdev_mean=0.1,
           episode_return_min=0.0, episode_return_mean=1.0, episode_return_max=2.0,
           episode_length_min=1.0, episode_length_mean=2.0, episode_length_max=3.0,
           interactions=100, elapsed_s=9.0, steps_per_s=11.0)


def status(**changes):
    return GenerationStatus(**{**ROW, **changes})


@pytest.mark.parametrize(("sense", "center", "reached"), [
    ("max", 10.0, True), ("max", 9.99, False), ("min", 10.0, True), ("min", 9.0, True),
    ("min", 10.01, False), ("max", math.inf, False), ("min", -math.inf, False),
    ("max", math.nan, False), ("max", None, False)])
def test_target_score_in_both_senses(sense, center, reached):
    reason = StopLimits(target_score=10.0, sense=sense).reason(status(center_eval=center))
    assert (reason is not None and reason.startswith("target_score reached")) is reached


def test_limits_stop_at_their_thresholds_and_not_before():
    assert StopLimits().reason(None) is None and StopLimits().reason(status()) is None
    assert StopLimits(generations=3).reason(status()) == "generations: 3 of 3 done"
    assert StopLimits(generations=4).reason(status()) is None
    assert StopLimits(max_interactions=500).reason(status()).startswith("max_interactions")
    assert StopLimits(max_interactions=501).reason(status()) is None
    assert StopLimits(max_time=9.0).reason(status()).startswith("max_time")
    assert StopLimits(max_time=9.5).reason(status()) is None


@pytest.mark.parametrize(("max_time", "elapsed", "said"), [
    (9.0, 9.04, "max_time: 9.0 s >= 9.0 s"), (3600.0, 3600.26, "max_time: 3600.3 s >= 3600.0 s"),
    (0.5, 0.513, "max_time: 0.51 s >= 0.5 s"),
    (0.001, 0.00162, "max_time: 0.0016 s >= 0.001 s")])  # it said "0.0 s >= 0.001 s"
def test_the_max_time_reason_shows_the_elapsed_time_as_finely_as_the_limit(max_time, elapsed,
                                                                           said):
    assert StopLimits(max_time=max_time).reason(status(elapsed_s=elapsed)) == said


def test_status_round_trips_through_a_dict_in_column_order():
    row = status().as_dict()
    assert list(row) == list(ROW)
    assert GenerationStatus.from_dict({**row, "unknown_old_key": 1}) == status()


def test_a_stall_is_no_rise_beyond_the_share_over_patience_evaluations():
    watch = StallWatch(patience=2, min_improvement=0.05)
    # bests: 10, 10, 10.4 (+4 % over two evaluations: a stall), then a new attempt
    assert [watch.stalled(v) for v in (10.0, 9.0, 10.4)] == [False, False, True]
    watch.reset()
    # bests: 10, 10.4, 11 (+10 %): progress; None (not evaluated) is not counted
    assert [watch.stalled(v) for v in (10.0, None, 10.4, 11.0)] == [False, False, False, False]
    assert watch.history == [10.0, 10.4, 11.0]
    assert StallWatch(patience=None).stalled(1.0) is False


def test_a_stall_when_minimizing_and_with_nonfinite_scores():
    watch = StallWatch(patience=1, min_improvement=0.1, sense="min")
    assert [watch.stalled(v) for v in (100.0, 95.0)] == [False, True]  # -5 %: not enough
    watch.reset()
    assert [watch.stalled(v) for v in (100.0, 80.0)] == [False, False]  # -20 %: progress
    watch = StallWatch(patience=1)
    assert [watch.stalled(v) for v in (math.nan, math.nan, 1.0)] == [False, False, False]
