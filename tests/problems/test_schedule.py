"""The work queue's rules (``problems/schedule.py``), by hand, on numpy and on jax.numpy: the
host loop and the jitted loop run these same functions."""

import numpy as np
import pytest

from neurorun.nets.arrays import jax_ops, numpy_ops
from neurorun.problems import schedule
from neurorun.problems.schedule import Schedule

OPS = [pytest.param(numpy_ops, id="numpy"),
       pytest.param(jax_ops, id="jax", marks=pytest.mark.extras("jax"))]


def lists(queue):
    return {name: np.asarray(value).tolist() for name, value in queue._asdict().items()}


def mask(ops, *flags):
    return ops().xp.asarray(np.array(flags, bool))


@pytest.mark.parametrize("ops", OPS)
def test_streaming_slots_take_pending_pairs_in_slot_order_and_skip_failed_solutions(ops):
    o = ops()
    table = o.xp.asarray(np.array([0, 1, 2, 0, 1, 2]))  # 3 solutions x 2 episodes
    q = schedule.start(o, table, 3, 2, 0)
    assert lists(q) == {"slot_pair": [0, 1], "next_pair": 2, "dead": [False, False],
                        "finished": [False] * 6, "failed": [False, False, False, True],
                        "open_before": [0, 1, 2, 3, 4, 5, 6]}
    q, taken = schedule.end(o, table, 0, q, mask(ops, True, True))
    assert lists(q)["slot_pair"] == [2, 3] and int(q.next_pair) == 4
    assert np.asarray(taken).tolist() == [True, True]
    assert lists(q)["finished"] == [True, True, False, False, False, False]
    q = schedule.fail(o, table, 0, q, mask(ops, True, False))  # pair 2: solution 2 fails
    assert lists(q)["slot_pair"] == [-1, 3] and lists(q)["dead"] == [True, False]
    assert lists(q)["failed"] == [False, False, True, True]
    assert lists(q)["open_before"] == [0, 1, 2, 2, 3, 4, 4]  # pairs 2 and 5 are closed
    q, taken = schedule.end(o, table, 0, q, mask(ops, False, True))
    assert lists(q)["slot_pair"] == [-1, 4] and int(q.next_pair) == 5
    q, taken = schedule.end(o, table, 0, q, mask(ops, False, True))  # pair 5: solution 2
    assert lists(q)["slot_pair"] == [-1, -1] and int(q.next_pair) == 6
    assert np.asarray(taken).tolist() == [False, False]
    assert lists(q)["finished"] == [True, True, False, True, True, False]


@pytest.mark.parametrize("ops", OPS)
def test_with_no_slot_left_the_pending_pairs_solutions_fail(ops):
    o = ops()
    table = o.xp.asarray(np.array([0, 1, 0, 1, 2, 2]))  # solution 2 only in pending pairs
    q = schedule.start(o, table, 3, 1, 0)
    q = schedule.fail(o, table, 0, q, mask(ops, True))
    assert lists(q)["failed"] == [True, True, True, True] and int(q.next_pair) == 6


@pytest.mark.parametrize("ops", OPS)
def test_padding_pairs_are_never_taken_and_lock_step_keeps_slots_on_their_solution(ops):
    o = ops()
    padded = o.xp.asarray(np.array([0, 1, 3]))  # a device's share: pair 2 is padding (n=3)
    assert lists(schedule.start(o, padded, 3, 4, 0))["slot_pair"] == [0, 1, -1, -1]
    table = o.xp.asarray(np.array([0, 1, 0, 1, 0, 1]))  # lock-step: 2 solutions x 3 episodes
    q = schedule.start(o, table, 2, 3, 2)  # a third slot stays idle
    assert lists(q)["slot_pair"] == [0, 1, -1]
    q, _ = schedule.end(o, table, 2, q, mask(ops, True, False, False))
    assert lists(q)["slot_pair"] == [2, 1, -1]
    q, _ = schedule.end(o, table, 2, q, mask(ops, True, True, False))
    q, taken = schedule.end(o, table, 2, q, mask(ops, True, True, False))
    assert lists(q)["slot_pair"] == [-1, 5, -1]
    assert np.asarray(taken).tolist() == [False, True, False]


@pytest.mark.parametrize("ops", OPS)
def test_a_step_counts_on_busy_slots_except_the_autoreset_step(ops):
    o = ops()
    q = schedule.start(o, o.xp.asarray(np.array([0, 1])), 2, 3, 0)  # slot 2 has no pair
    assert np.asarray(schedule.counted(q, mask(ops, False, True, False))).tolist() == [
        True, False, False]


@pytest.mark.parametrize("ops", OPS)
def test_a_non_finite_observation_fails_its_solution_only_where_the_step_counts(ops):
    o = ops()
    table = o.xp.asarray(np.array([0, 1, 2, 0, 1, 2]))  # 3 solutions x 2 episodes
    q = schedule.start(o, table, 3, 3, 0)  # slots 0-2 run pairs 0-2
    # slot 0: the autoreset step (not counted): its non-finite terminal observation fails
    # nothing; slot 1 counts with a non-finite one: solution 1 fails, the slot retires
    q, counts = schedule.observe(o, table, 0, q, mask(ops, True, False, False),
                                 mask(ops, False, False, True))
    assert np.asarray(counts).tolist() == [False, False, True]
    assert lists(q)["failed"] == [False, True, False, True]
    assert lists(q)["slot_pair"] == [0, -1, 2] and lists(q)["dead"] == [False, True, False]
    q, counts = schedule.observe(o, table, 0, q, mask(ops, False, False, False),
                                 None)  # every observation finite
    assert np.asarray(counts).tolist() == [True, False, True]
    assert lists(q)["failed"] == [False, True, False, True]


def test_the_host_schedule_seeds_pairs_and_hands_them_out_in_order():
    schedule = Schedule(3, 2, 2, streaming=True, seed=100)  # pairs 0..5, k = e * 3 + j
    assert schedule.slot_pair.tolist() == [0, 1]
    assert schedule.reset_seeds() == [100, 101]
    assert schedule.end(np.array([1])).tolist() == [1]  # slot 1 takes pair 2
    assert schedule.slot_pair.tolist() == [0, 2]
    # slot 0 (pair 0) counts with a non-finite observation: solution 0 fails, and pair 3
    # (its second episode) is skipped
    assert schedule.observe(np.zeros(2, bool), np.array([False, True])).tolist() == [False, True]
    assert schedule.slot_pair.tolist() == [-1, 2] and schedule.failed.tolist() == [1, 0, 0]
    schedule.end(np.array([1]))
    assert schedule.slot_pair.tolist() == [-1, 4]
    assert schedule.pair_seeds(np.array([4])).tolist() == [100 + 1 + (1 << 20)]
    schedule.end(np.array([1]))
    assert schedule.slot_pair.tolist() == [-1, 5]
    schedule.end(np.array([1]))
    assert schedule.slot_pair.tolist() == [-1, -1]
    assert schedule.finished.tolist() == [False, True, True, False, True, True]


def test_a_host_lock_step_schedule_needs_a_slot_per_solution():
    schedule = Schedule(2, 3, 2, streaming=False, seed=0)
    schedule.end(np.array([0]))
    assert schedule.slot_pair.tolist() == [2, 1]  # solution 0's second episode
    with pytest.raises(ValueError, match="needs as many env slots"):
        Schedule(3, 1, 2, streaming=False, seed=0)


@pytest.mark.parametrize("ops", OPS)
def test_an_end_with_no_ending_slot_changes_nothing(ops):
    o = ops()
    table = o.xp.asarray(np.array([0, 1, 0, 1]))
    q = schedule.start(o, table, 2, 1, 0)
    after, taken = schedule.end(o, table, 0, q, mask(ops, False))
    assert lists(after) == lists(q) and np.asarray(taken).tolist() == [False]


def test_the_host_schedule_counts_an_all_finite_step_without_changing_the_queue():
    schedule = Schedule(4, 1, 3, streaming=True, seed=0, usable=2)  # slot 2 stays idle
    before = lists(schedule.queue)
    # slot 0 just ended (its autoreset step does not count), slot 1 runs, slot 2 has no pair
    assert schedule.observe(np.array([True, False, False]), None).tolist() == [False, True,
                                                                               False]
    assert lists(schedule.queue) == before
