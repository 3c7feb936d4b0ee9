"""The compiled evaluation of jax envs (brax, MuJoCo Playground): a rollout as jax programs.

``JaxRollout`` runs what :func:`neurorun.problems.rollout.rollout` runs, with its semantics,
as compiled jax programs (:mod:`neurorun.problems.jax_program`): the policy
(:mod:`neurorun.nets.arrays` on jax.numpy), the env step with next-step autoreset and action
clipping (the step and key sequence of ``JaxVecEnv``), the work queue of (solution, episode)
pairs over env slots, per-pair returns and lengths, non-finite flags and observation
statistics. Nothing crosses to Python per step; the host turns per-pair results into fitness
with the step-by-step rollout's own code (``pair_results``), so both paths give the same
fitness, counts and statistics for the same seed, to float rounding (sums over steps are
compensated float32 sums).

Stages: a jax batch steps every env, busy or not, so once the queue is empty the slots whose
episodes ended would idle until the longest episode ends (brax ant early in training: a few
1000-step episodes among many of tens of steps; at popsize 1,024 on 256 slots only 13-49 % of
the simulated steps counted). On jax's CPU, where a step costs in proportion to the batch, the
rollout then moves the busy slots into a batch half the size (``STAGE_FACTOR``) once at most
that many are busy, and again, down to one env (90-92 % counted). Every stage is the same
program at another batch size, compiled at its first use. Slots move only once no pair is
pending, so no pair's seed, start or schedule changes; but a simulator may round differently
at another batch size (brax ant: 1e-6 on the first step), which a chaotic env amplifies over
the rest of an episode. Same seed, same results; against the step-by-step path, equal up to
that rounding (``shrinks = False`` keeps one batch). Programs are kept per batch shape in this
process and by jax's persistent compilation cache for later runs.

The first env states come from a program of their own: traced into the stage's program, the
reset made XLA lay out the loop's env states so that every step ran at half speed
(Playground CheetahRun, 256 envs).
"""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np
import torch
from torch import Tensor

from neurorun.nets.arrays import ArrayPolicy
from neurorun.problems.options import RolloutOptions
from neurorun.problems.rollout import RolloutResult, pair_results
from neurorun.problems.running_norm import RunningNorm

log = logging.getLogger(__name__)
STAGE_FACTOR = 2  # each stage's batch is this many times smaller than the last (CPU only)
MIN_STAGE_SLOTS = 8  # no stage is smaller (a step of 8 envs costs a few of 1 on the CPU)


class JaxRollout:
    """Compiled rollouts of one env and one network (see the module docstring).

    Args:
        make_batch: ``slots -> batched env`` (``batched_jax_env`` of the problem's env).
        spec: the env spec, for messages.
        policy: the array form of the network.
        device: torch device of the results (a CUDA device: jax's GPU runs the programs).
    """

    def __init__(self, make_batch: Any, spec: str, policy: ArrayPolicy, device: torch.device):
        from neurorun.envs.jax_env import use_compilation_cache

        use_compilation_cache()
        self.make_batch, self.spec, self.policy, self.device = make_batch, spec, policy, device
        self._batches: dict[int, Any] = {}
        self._size: int | None = None
        self._compiled: dict[tuple[str, Any], Any] = {}
        self.shrinks = True  # move the last busy slots into smaller batches (stages; CPU)
        self.compile_seconds = 0.0  # spent compiling (or loading from jax's cache) so far

    def _batch(self, slots: int) -> Any:
        if slots not in self._batches:
            self._batches[slots] = self.make_batch(slots)
        return self._batches[slots]

    def _observation_size(self, slots: int) -> int:
        """An observation's length (Playground's ``observation_size`` traces the env's reset at
        every call: seconds)."""
        if self._size is None:
            self._size = int(self._batch(slots).observation_size)
        return self._size

    def memory_bytes(self, solutions: int, slots: int, dim: int) -> int:
        """About the memory of one evaluation of ``solutions`` parameter rows of length ``dim``
        on ``slots`` env slots, from the shapes of the env states (traced, nothing compiled
        or allocated): three copies of the states in flight (the loop's carry, the step's
        output, XLA's temporaries), every solution's and slot's parameters, the per-slot
        observation statistics."""
        import jax

        batch = self._batch(slots)
        state = jax.eval_shape(batch.reset, jax.random.PRNGKey(0))
        state_bytes = sum(leaf.size * leaf.dtype.itemsize
                          for leaf in jax.tree_util.tree_leaves(state))
        size = self._observation_size(slots)
        return 3 * state_bytes + 4 * dim * (solutions + slots) + 4 * 5 * slots * size

    def __call__(self, params: Tensor, options: RolloutOptions, *, seed: int, streaming: bool,
                 slots: int, normalizer: RunningNorm | None = None,
                 collect: RunningNorm | None = None, noise_seed: int = 0) -> RolloutResult:
        """Run each of ``params (n, D)`` for ``options.num_episodes`` episodes on ``slots``
        env slots (the arguments of :func:`neurorun.problems.rollout.rollout`)."""
        import dataclasses

        import jax
        import jax.numpy as jnp

        from neurorun.problems.jax_program import Inputs, Shape

        n, episodes = params.shape[0], options.num_episodes
        slots = min(int(slots), n * episodes if streaming else n)
        if not streaming and slots < n:
            raise ValueError(f"lock-step rollout of {n} solutions needs as many env slots; "
                             f"got {slots}")
        stdev = options.action_noise_stdev or 0.0
        shape = Shape(slots=slots, solutions=n, num_episodes=episodes, streaming=streaming,
                      normalize=normalizer is not None, collect=collect is not None,
                      noisy=stdev > 0)
        size = self._observation_size(slots)
        scale, shift = (normalizer.affine("cpu", torch.float32) if normalizer is not None
                        else (torch.ones(size), torch.zeros(size)))
        jax_params = self._to_jax(params)
        carry, center = self._program("start", shape)(
            jax_params, jax.random.PRNGKey(int(seed)), jax.random.PRNGKey(int(noise_seed)))
        inputs = Inputs(jax_params, center, jnp.asarray(scale.numpy()),
                        jnp.asarray(shift.numpy()), jnp.float32(stdev))
        totals = _Totals(size)
        while True:
            smaller = self._smaller(shape.slots)
            carry = self._program("stage", shape)(inputs, carry, jnp.int32(smaller or -1))
            totals.add(shape.slots, carry)
            if not smaller or not bool((carry.slot_pair >= 0).any()):
                break
            carry = self._program("shrink", (shape, smaller))(carry)
            shape = dataclasses.replace(shape, slots=smaller)
        out = {name: np.array(value) for name, value in jax.device_get(
            {"returns": carry.returns, "lengths": carry.lengths, "finished": carry.finished,
             "failed": carry.failed, "center": center}).items()}
        return self._result(n, out, totals, options, collect)

    def _smaller(self, slots: int) -> int:
        """The next stage's batch (0: none; accelerators keep one batch: there a smaller one
        costs about the same per step)."""
        import jax

        smaller = slots // STAGE_FACTOR
        if not self.shrinks or jax.default_backend() != "cpu" or smaller < MIN_STAGE_SLOTS:
            return 0
        return smaller

    def _to_jax(self, params: Tensor) -> Any:
        import jax.numpy as jnp

        params = params.detach().to(torch.float32)
        if params.device.type == "cpu":
            return jnp.asarray(params.numpy())
        import jax.dlpack

        return jnp.array(jax.dlpack.from_dlpack(params.contiguous()), copy=True)

    def _program(self, kind: str, shape: Any) -> Any:
        """The jitted program ``kind`` (start, stage or shrink) of ``shape``, compiled at its
        first call."""
        key = (kind, shape)
        if key not in self._compiled:
            import jax

            from neurorun.problems import jax_program

            if kind == "start":
                env = self._batch(shape.slots)
                function = jax.jit(lambda p, k, nk: jax_program.start(env, self.policy, shape, p,
                                                                      k, nk))
            elif kind == "stage":
                env = self._batch(shape.slots)
                function = jax.jit(lambda i, c, limit: jax_program.stage(env, self.policy, shape,
                                                                         i, c, limit))
            else:
                function = jax.jit(lambda c: jax_program.shrink(c, shape[1]))
            self._compiled[key] = _Compiled(function, self, kind, shape)
        return self._compiled[key]

    def _result(self, n: int, out: dict[str, np.ndarray], totals: _Totals,
                options: RolloutOptions, collect: RunningNorm | None) -> RolloutResult:
        device = self.device
        returns = torch.from_numpy(out["returns"].astype(np.float64)).to(device)
        lengths = torch.from_numpy(out["lengths"].astype(np.int64)).to(device)
        fitness, nonfinite, kept = pair_results(returns, lengths, out["finished"],
                                                out["failed"], n, options)
        if collect is not None:
            collect.update(totals.statistics(out["center"], collect))
        return RolloutResult(
            fitness=fitness, nonfinite=nonfinite, episode_returns=returns[kept],
            episode_lengths=lengths[kept], lengths=lengths, interactions=int(out["lengths"].sum()),
            episodes=int(out["finished"].sum()), vector_steps=totals.steps,
            simulated_steps=totals.simulated, collected=collect)


class _Compiled:
    """A jitted program, compiled at its first call; env programs report their compilation,
    which takes from seconds to minutes on a CPU."""

    def __init__(self, function: Any, owner: JaxRollout, kind: str, shape: Any):
        self.function, self.owner, self.kind, self.shape = function, owner, kind, shape
        self.ready = False

    def __call__(self, *args: Any) -> Any:
        if self.ready:
            return self.function(*args)
        import jax

        shape, reported = self.shape, self.kind != "shrink"
        what = ("the first env states" if self.kind == "start" else "the evaluation")
        if reported:
            log.info("compiling %s of %s for %d env slots (%d solutions x %d episodes) on jax's "
                     "%s, once per batch shape...", what, self.owner.spec, shape.slots,
                     shape.solutions, shape.num_episodes, jax.default_backend())
        started = time.perf_counter()
        self.function = self.function.lower(*args).compile()
        seconds = time.perf_counter() - started
        self.owner.compile_seconds += seconds
        if reported:
            log.info("compiled %s of %s in %.0f s", what, self.owner.spec, seconds)
        self.ready = True
        return self.function(*args)


class _Totals:
    """Step counts and observation sums over the stages of one rollout (float64, host)."""

    def __init__(self, size: int):
        self.steps = self.simulated = 0
        self.count = 0.0
        self.shifted = np.zeros(size)
        self.squares = np.zeros(size)

    def add(self, slots: int, carry: Any) -> None:
        import jax

        steps, count, shifted, squares = jax.device_get(
            (carry.steps, carry.obs_count.sum(), carry.obs_sum, carry.obs_squares))
        self.steps += int(steps)
        self.simulated += int(steps) * slots
        self.count += float(count)
        self.shifted += np.asarray(shifted, np.float64).sum(0)
        self.squares += np.asarray(squares, np.float64).sum(0)

    def statistics(self, center: np.ndarray, like: RunningNorm) -> RunningNorm:
        """The observation statistics of the sums of ``obs - center``."""
        center = center.astype(np.float64)
        count, shifted = self.count, self.shifted
        return RunningNorm.from_state_dict({
            "size": like.size, "min_variance": like.min_variance,
            "count": torch.tensor(count), "sum": torch.from_numpy(shifted + count * center),
            "sum_of_squares": torch.from_numpy(self.squares + 2 * center * shifted
                                               + count * center * center)})
