"""jax envs traced once (``envs/jax_env.TracedOnce``): the physics of one env is traced a
single time, however many programs and batch sizes call it."""

import jax.numpy as jnp
import numpy as np
import pytest
from torch import nn

pytestmark = pytest.mark.extras("jax")


class Walk:
    """One env (not batched): obs = [position]; the position moves by the action; an episode
    lasts three steps (EpisodeWrapper ends it). Counts how often jax traces (runs) its
    reset and step in Python."""

    def __init__(self):
        self.traced = {"reset": 0, "step": 0}

    @property
    def action_size(self):
        return 1

    def reset(self, key):
        from brax.envs.base import State

        self.traced["reset"] += 1
        zero = jnp.zeros((), jnp.float32)
        return State(pipeline_state=None, obs=jnp.zeros(1, jnp.float32), reward=zero,
                     done=zero, metrics={}, info={})

    def step(self, state, action):
        self.traced["step"] += 1
        return state.replace(obs=state.obs + action, reward=action[0])


def test_two_batch_sizes_two_programs_and_the_spaces_trace_the_physics_once():
    from brax.envs.wrappers.training import EpisodeWrapper, VmapWrapper

    from neurorun.envs.jax_env import TracedOnce
    from neurorun.nets.arrays import ArrayPolicy
    from neurorun.problems.jax import program as jax_program
    from neurorun.problems.jax.rollout import NO_CUT

    walk = Walk()
    traced = TracedOnce(walk)
    assert traced.observation_size == 1 and traced.action_size == 1
    env = VmapWrapper(EpisodeWrapper(traced, 3, 1))
    policy = ArrayPolicy(nn.Linear(1, 1))  # parameters: weight, then bias
    returns = {}
    for slots in (1, 2):  # two batch sizes: the first carry and the phase of each
        inputs = jax_program.Inputs(
            params=jnp.asarray([[0.0, 0.5], [0.0, -0.25]], jnp.float32),
            pair_solution=jnp.arange(2, dtype=jnp.int32), pair_keys=jnp.zeros((2, 2), jnp.uint32),
            noise_keys=jnp.zeros((2, 2), jnp.uint32), center=jnp.zeros(1), scale=jnp.ones(1),
            shift=jnp.zeros(1), stdev=jnp.float32(0), cut=jnp.int32(NO_CUT))
        shape = jax_program.ProgramShape(slots=slots, chunk=slots, solutions=2, pairs=2,
                                         following=0, normalize=False, collect=False, noisy=False)
        carry = jax_program.first_carry(env, policy, shape, inputs, slots)
        carry = jax_program.phase(env, policy, shape, inputs, carry, jnp.int32(-1))
        returns[slots] = np.asarray(carry.returns).tolist()
    # three steps of a constant action each: 3 x 0.5 and 3 x -0.25, on one slot or two
    assert returns == {1: [1.5, -0.75], 2: [1.5, -0.75]}
    assert walk.traced == {"reset": 1, "step": 1}
