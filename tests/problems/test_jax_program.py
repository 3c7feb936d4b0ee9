"""The compiled evaluation's loop (``problems/jax_program.py``) on a counting env, with every
pair's return, length and the step count worked out by hand from the queue's rules."""

import jax.numpy as jnp
import numpy as np
import pytest
from torch import nn

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


def run(lengths, nan_pairs=(), slots=2):
    """Solutions 0, 1, 2 act 0.5, -0.25 and 2 (clipped to 1) at every step; pairs are
    episode-major (pair k runs solution k % 3) with the given episode lengths."""
    from neurorun.nets.arrays import ArrayPolicy
    from neurorun.problems import jax_program

    pairs = len(lengths)
    policy = ArrayPolicy(nn.Linear(1, 1))  # parameters: weight, then bias
    params = jnp.asarray([[0.0, 0.5], [0.0, -0.25], [0.0, 2.0], [0.0, 0.0]], jnp.float32)
    keys = np.array([[1 if k in nan_pairs else 0, n] for k, n in enumerate(lengths)], np.uint32)
    inputs = jax_program.Inputs(
        params=params, pair_solution=jnp.arange(pairs, dtype=jnp.int32) % 3,
        pair_keys=jnp.asarray(keys), noise_keys=jnp.zeros((pairs, 2), jnp.uint32),
        center=jnp.zeros(1), scale=jnp.ones(1), shift=jnp.zeros(1), stdev=jnp.float32(0))
    static = jax_program.Static(slots=slots, solutions=3, pairs=pairs, following=0,
                                normalize=False, collect=False, noisy=False)
    carry, _ = jax_program.start(Counter(), policy, static, inputs)
    return jax_program.stage(Counter(), policy, static, inputs, carry, jnp.int32(-1))


def test_pairs_stream_over_two_slots_with_an_autoreset_step_between_episodes():
    # slot 0: pair 0 (steps 1-2), reset at 3, pair 2 (step 4), reset at 5, pair 4 (6-7);
    # slot 1: pair 1 (steps 1-3), reset at 4, pair 3 (5-6), reset at 7, pair 5 (step 8)
    c = run([2, 3, 1, 2, 2, 1])
    assert np.asarray(c.lengths).tolist() == [2, 3, 1, 2, 2, 1]
    np.testing.assert_allclose(np.asarray(c.returns), [1.0, -0.75, 1.0, 1.0, -0.5, 1.0])
    assert int(c.steps) == 8
    assert np.asarray(c.queue.finished).all()
    assert np.asarray(c.queue.failed).tolist() == [False, False, False, True]  # row 3: padding


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
