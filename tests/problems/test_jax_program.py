"""The compiled evaluation's loop (``problems/jax/program.py``) on a counting env, with every
pair's return, length and the step count worked out by hand from the queue's rules."""

import jax.numpy as jnp
import numpy as np
import pytest
from torch import nn

from neurorun.problems.jax.rollout import NO_CUT

pytestmark = pytest.mark.extras("jax")


class Counter:
    """obs = [steps of the episode so far]; reward = the action; an episode lasts ``key[1]``
    steps (its reset key's second word); a reset key whose first word is 1 gives a NaN
    observation."""

    def reset(self, keys):
        from brax.envs.base import State

        zero = jnp.zeros(keys.shape[0], jnp.float32)
        obs = jnp.where(keys[:, :1] == 1, jnp.nan, 0.0).astype(jnp.float32)
        return State(pipeline_state=None, obs=obs, reward=zero, done=zero,
                     info={"t": zero, "length": keys[:, 1].astype(jnp.float32)})

    def step(self, state, action):
        t = state.info["t"] + 1
        return state.replace(obs=t[:, None], reward=action[:, 0],
                             done=(t >= state.info["length"]).astype(jnp.float32),
                             info={"t": t, "length": state.info["length"]})


def inputs_of(lengths, nan_pairs=(), cut=NO_CUT):
    """Solutions 0, 1, 2 act 0.5, -0.25 and 2 (clipped to 1) at every step; pairs are
    episode-major (pair k runs solution k % 3) with the given episode lengths, cut after
    ``cut`` steps."""
    from neurorun.problems.jax import program as jax_program

    pairs = len(lengths)
    params = jnp.asarray([[0.0, 0.5], [0.0, -0.25], [0.0, 2.0], [0.0, 0.0]], jnp.float32)
    keys = np.array([[1 if k in nan_pairs else 0, n] for k, n in enumerate(lengths)], np.uint32)
    inputs = jax_program.Inputs(
        params=params, pair_solution=jnp.arange(pairs, dtype=jnp.int32) % 3,
        pair_keys=jnp.asarray(keys), noise_keys=jnp.zeros((pairs, 2), jnp.uint32),
        center=jnp.zeros(1), scale=jnp.ones(1), shift=jnp.zeros(1), stdev=jnp.float32(0),
        cut=jnp.int32(cut))
    return inputs


def policy():
    from neurorun.nets.arrays import ArrayPolicy

    return ArrayPolicy(nn.Linear(1, 1))  # parameters: weight, then bias


def shape_of(slots, pairs, chunk=None, solutions=3):
    from neurorun.problems.jax import program as jax_program

    return jax_program.ProgramShape(slots=slots, chunk=chunk or slots, solutions=solutions,
                                    pairs=pairs, following=0, normalize=False, collect=False,
                                    noisy=False)


def run(lengths, nan_pairs=(), slots=2, chunk=None, limit=-1, cut=NO_CUT):
    """One phase of the lengths' pairs on ``slots`` env slots in chunks of ``chunk``."""
    from neurorun.problems.jax import program as jax_program

    inputs = inputs_of(lengths, nan_pairs, cut)
    shape = shape_of(slots, len(lengths), chunk)
    carry = jax_program.first_carry(Counter(), policy(), shape, inputs, slots)
    return jax_program.phase(Counter(), policy(), shape, inputs, carry, jnp.int32(limit))


def test_pairs_stream_over_two_slots_with_an_autoreset_step_between_episodes():
    # slot 0: pair 0 (steps 1-2), reset at 3, pair 2 (step 4), reset at 5, pair 4 (6-7);
    # slot 1: pair 1 (steps 1-3), reset at 4, pair 3 (5-6), reset at 7, pair 5 (step 8)
    c = run([2, 3, 1, 2, 2, 1])
    assert np.asarray(c.lengths).tolist() == [2, 3, 1, 2, 2, 1]
    np.testing.assert_allclose(np.asarray(c.returns), [1.0, -0.75, 1.0, 1.0, -0.5, 1.0])
    assert int(c.steps) == 8
    assert np.asarray(c.queue.finished).all()
    assert np.asarray(c.queue.failed).tolist() == [False, False, False, True]  # row 3: padding


def test_a_cut_ends_episodes_and_their_slots_reset_as_after_an_end():
    # cut 2: slot 0: pair 0 (steps 1-2), reset at 3, pair 2 (step 4), reset at 5, pair 4
    # (6-7); slot 1: pair 1 cut after steps 1-2, reset at 3, pair 3 (4-5), reset at 6,
    # pair 5 (step 7): the lengths of [2, 3, 1, 2, 2, 1] with 3 cut to 2, a step sooner
    c = run([2, 3, 1, 2, 2, 1], cut=2)
    assert np.asarray(c.lengths).tolist() == [2, 2, 1, 2, 2, 1]
    np.testing.assert_allclose(np.asarray(c.returns), [1.0, -0.5, 1.0, 1.0, -0.5, 1.0])
    assert int(c.steps) == 7
    assert np.asarray(c.queue.finished).all()


def test_a_nan_observation_fails_its_solution_and_skips_its_other_pairs():
    # pair 2 (solution 2) starts with a NaN at step 4 on slot 0, which retires; slot 1 runs
    # pair 1 (1-3), pair 3 (5-6), pair 4 (8-9) and skips pair 5 (solution 2)
    c = run([2, 3, 1, 2, 2, 1], nan_pairs={2})
    assert np.asarray(c.lengths).tolist() == [2, 3, 0, 2, 2, 0]
    np.testing.assert_allclose(np.asarray(c.returns), [1.0, -0.75, 0.0, 1.0, -0.5, 0.0])
    assert int(c.steps) == 9
    assert np.asarray(c.queue.finished).tolist() == [True, True, False, True, True, False]
    assert np.asarray(c.queue.failed).tolist() == [False, False, True, True]
    assert np.asarray(c.queue.dead).tolist() == [True, False]


def test_only_chunks_holding_a_busy_slot_step_and_busy_slots_move_to_the_first_chunk():
    # 4 pairs on 4 slots in chunks of 2: at step 1 every slot steps (4 simulated), then only
    # slot 3's pair runs on (length 5): it moves to slot 0, and one chunk of 2 steps 4 more
    # times (8); in one chunk of 4 the same returns cost 4 x 5 = 20 simulated steps
    chunked, whole = run([1, 1, 1, 5], slots=4, chunk=2), run([1, 1, 1, 5], slots=4)
    for c in (chunked, whole):
        assert np.asarray(c.lengths).tolist() == [1, 1, 1, 5]
        np.testing.assert_allclose(np.asarray(c.returns), [0.5, -0.25, 1.0, 2.5])
        assert int(c.steps) == 5
    assert (int(chunked.simulated), int(whole.simulated)) == (4 + 4 * 2, 4 * 5)
    assert np.asarray(chunked.queue.slot_pair).tolist() == [-1, -1, -1, -1]


def test_the_last_busy_slots_hand_over_to_a_drain_that_finishes_their_pairs():
    """A queue phase stops once no pair waits and at most 2 slots are busy; the drain runs
    those slots' pairs on as its own solutions 0 and 1: the pairs' returns and lengths are
    the ones of one phase to the end."""
    from neurorun.problems.jax import program as jax_program

    lengths = [2, 3, 1, 2, 6, 4]
    inputs = inputs_of(lengths)
    queue = shape_of(4, len(lengths), chunk=2)
    carry = jax_program.first_carry(Counter(), policy(), queue, inputs, 4)
    carry = jax_program.phase(Counter(), policy(), queue, inputs, carry, jnp.int32(2))
    # slots 0-3 take pairs 0-3; pair 2 ends at step 1 (slot 2 takes pair 4), pairs 0 and 3
    # at step 2 (slot 0 takes pair 5, slot 3 goes idle), pair 1 at step 3: 2 slots are busy
    assert int(carry.steps) == 3
    drain = shape_of(2, 2, chunk=1, solutions=2)
    drain_inputs, drain_carry, origin = jax_program.hand_over(inputs, carry, queue, drain)
    assert sorted(np.asarray(origin).tolist()) == [4, 5]
    drain_carry = jax_program.phase(Counter(), policy(), drain, drain_inputs, drain_carry,
                                    jnp.int32(-1))
    returns, lengths_run = np.array(carry.returns), np.array(carry.lengths)
    for slot, pair in enumerate(np.asarray(origin).tolist()):
        returns[pair] = np.asarray(drain_carry.returns)[slot]
        lengths_run[pair] = np.asarray(drain_carry.lengths)[slot]
    whole = run(lengths, slots=4)
    assert lengths_run.tolist() == lengths == np.asarray(whole.lengths).tolist()
    np.testing.assert_allclose(returns, np.asarray(whole.returns))
    np.testing.assert_allclose(returns, [1.0, -0.75, 1.0, 1.0, -1.5, 4.0])
    # pair 4 started at step 2 (6 steps: to step 7), pair 5 at step 3 (4 steps: to step 6)
    assert int(carry.steps) + int(drain_carry.steps) == int(whole.steps) == 8
