"""The compiled evaluation of jax envs (brax, MuJoCo Playground): a rollout as jax programs.

``JaxRollout`` runs what :func:`neurorun.problems.rollout.rollout` runs, with its semantics,
as compiled jax programs (:mod:`neurorun.problems.jax.program`): the policy
(:mod:`neurorun.nets.arrays` on jax.numpy), the env step with next-step autoreset and action
clipping (the step and key sequence of ``JaxVecEnv``), the work queue of (solution, episode)
pairs over env slots, per-pair returns and lengths, non-finite flags and observation
statistics. Nothing crosses to Python per step; the host turns per-pair results into fitness
with the code the step-by-step rollout uses too (``returns.pair_results``), so both paths give
the same fitness, counts and statistics for the same seed, to float rounding (sums over steps
are compensated float32 sums).

Compiling a physics program takes seconds to minutes on a CPU, so a run compiles as few as it
can, each once per shape (and keeps them in jax's persistent cache for later runs):

- a **queue** program per population shape steps the pairs over the env slots, in chunks
  that cost only while they hold a busy slot (a jax batch steps every env, busy or not, and
  a population's episodes end at very different steps);
- one **drain** program finishes every rollout's last ``DRAIN_SLOTS`` busy slots per device in
  smaller chunks, and runs every rollout whose pairs all fit in it at once whole: the center's
  test episodes, ``neurorun-eval``'s and a small population's. Its shape depends on nothing
  but the slots, the chunk and whether observations are normalized, so the run's own test
  episodes and ``neurorun-eval``'s are one program and give the same returns.

Every rollout of a given shape runs the same programs in the same order, moving slots only at
points the episodes' ends decide, so the same seed gives the same results. A physics program
rounds differently at another chunk size or slot (a chaotic env amplifies that over an
episode), so against the step-by-step path the results are equal up to that rounding
(``one_batch`` steps every slot in one call, as that path does).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from neurorun.envs import backend_of, batched_jax_env
from neurorun.envs.jax_env import use_compilation_cache
from neurorun.nets.arrays import ArrayPolicy, NoArrayFormError
from neurorun.problems.devices import jax_devices
from neurorun.problems.jax.compiling import watched
from neurorun.problems.jax.mesh import DevicePrograms
from neurorun.problems.jax.pairs import (
    PairSplit,
    PairTables,
    PhaseSums,
    SharedInputs,
    merge_drained,
    padded,
    padded_to,
    pair_arrays,
    split_pairs,
    stacked_inputs,
)
from neurorun.problems.options import EnvOptions, RolloutOptions
from neurorun.problems.returns import RolloutResult, pair_results
from neurorun.problems.running_norm import RunningNorm

# jax and the jax-importing modules (program.py, lapack.py) are imported in the methods that
# use them: the factory here is imported on every run, host envs included
log = logging.getLogger(__name__)
QUEUE_CHUNK = 32  # envs per step call of the queue program (CPU; benchmarks/bench_chunks.py)
DRAIN_SLOTS = 16  # slots of the drain program a device (CPU): fewer than a queue chunk's
DRAIN_CHUNK = 8  # envs per step call of the drain program (CPU)
ACCELERATOR_DRAIN_SLOTS = 16  # on a GPU or TPU every batch size costs about one step: no chunks
NO_CUT = 2**31 - 1  # the cut of episodes that end where the env ends them (int32's largest)
STALL_SECONDS = 120  # a compile (or evaluation) this long is said to be still running


def compiled_rollout(env: EnvOptions, network: Any, architecture: str,
                     device: torch.device) -> JaxRollout | None:
    """The compiled evaluation of ``network`` on ``env``; None on other envs, and for a network
    without a jax form (evaluated step by step from Python then, with a warning)."""
    if not backend_of(env.spec).is_jax:
        return None
    devices = jax_devices(env.devices)
    try:
        form = ArrayPolicy(network)
    except NoArrayFormError as error:
        log.warning("the network has no jax form (%s), so %s is evaluated step by step from "
                    "Python on one device, several times slower than one compiled program%s;"
                    " a network string has a jax form", error, env.spec,
                    f" on {len(devices)} devices" if len(devices) > 1 else "")
        return None
    make_batch = functools.partial(batched_jax_env, env.spec, env.episode_length, **env.config)
    label = (f"{env.spec} {dict(sorted(env.config.items()))} "
             f"episode_length={env.episode_length} {architecture}")
    return JaxRollout(make_batch, env.spec, form, device, devices, label)


class JaxRollout:
    """Compiled rollouts of one env and one network on ``devices`` (see the module docstring).

    Args:
        make_batch: ``() -> env`` vectorized over reset keys (``batched_jax_env``).
        spec: the env spec, for messages.
        policy: the array form of the network.
        device: torch device of the results (a CUDA device: jax's GPU runs the programs).
        devices: the jax devices that share each evaluation (None: jax's first device).
        label: what makes the programs of this env and network what they are (the env's
            config and the network), for the record of compile times.
    """

    def __init__(self, make_batch: Any, spec: str, policy: ArrayPolicy, device: torch.device,
                 devices: Sequence[Any] | None = None, label: str | None = None):
        import jax

        from neurorun.problems.jax.lapack import inline_chunk

        use_compilation_cache()
        self.spec, self.device = spec, device
        self.env = make_batch()
        self.programs = DevicePrograms(self.env, policy, devices or jax.devices()[:1], spec,
                                       label or spec)
        self.devices = self.programs.devices  # the one list: the mesh's
        self.cpu = self.devices[0].platform == "cpu"
        # several CPU devices: chunks small enough that jax's LAPACK kernels run inline
        self.largest_chunk = (inline_chunk(self.env) if self.cpu and len(self.devices) > 1
                              else None)
        self._size: int | None = None
        self._said: set[tuple[int, int]] = set()  # splits said to leave a device idle
        self.one_batch = False  # every slot in one step call, one program (as step by step)
        self.last_seconds = 0.0  # the last evaluation's (a stall warning waits 10x as long)

    def _observation_size(self) -> int:
        """An observation's length (Playground's ``observation_size`` traces the env's reset at
        every call: seconds)."""
        if self._size is None:
            self._size = int(self.env.observation_size)
        return self._size

    def memory_bytes(self, solutions: int, dim: int) -> tuple[int, int]:
        """About the memory of one evaluation of ``solutions`` parameter rows of length
        ``dim``, as (bytes whatever the slots, bytes per env slot), from the shapes of the env
        states (traced, nothing compiled or allocated): every solution's parameters on each
        device; per slot, three copies of its env state in flight (the loop's carry, the
        step's output, XLA's temporaries), its parameters and its observation statistics."""
        import jax

        keys = jax.ShapeDtypeStruct((1, 2), np.uint32)
        state = jax.eval_shape(self.env.reset, keys)
        state_bytes = sum(leaf.size * leaf.dtype.itemsize
                          for leaf in jax.tree_util.tree_leaves(state))
        size = self._observation_size()
        return (4 * dim * (solutions + 1) * len(self.devices),
                3 * state_bytes + 4 * dim + 4 * 5 * size)

    def __call__(self, params: Tensor, options: RolloutOptions, *, seed: int, streaming: bool,
                 slots: int, normalizer: RunningNorm | None = None,
                 collect: RunningNorm | None = None, noise_seed: int = 0,
                 population: bool = True, cut: int | None = None) -> RolloutResult:
        """Run each of ``params (n, D)`` for ``options.num_episodes`` episodes on ``slots``
        env slots in all (the arguments of :func:`neurorun.problems.rollout.rollout`);
        ``population``: a generation's (not a center's test episodes: their split is no news)."""
        started = time.perf_counter()
        n, episodes = params.shape[0], options.num_episodes
        if not streaming and slots < n:
            raise ValueError(f"lock-step rollout of {n} solutions needs as many env slots; "
                             f"got {slots}")
        split = split_pairs(n, episodes, len(self.devices), streaming)
        if population:
            self._say_split(n, episodes, split)
        size = self._observation_size()
        scale, shift = (normalizer.affine("cpu", torch.float32) if normalizer is not None
                        else (torch.ones(size), torch.zeros(size)))
        center = (normalizer.mean.float().cpu().numpy() if normalizer is not None
                  else np.zeros(size, np.float32))
        shared = SharedInputs(np.asarray(center, np.float32), scale.numpy(), shift.numpy(),
                        np.float32(options.action_noise_stdev or 0.0),
                        np.int32(NO_CUT if cut is None else min(cut, NO_CUT)))
        tables = split.tables(seed, noise_seed)
        usable = split.slots(slots)
        sums = PhaseSums(size)
        with watched(f"evaluating {n} solutions x {episodes} episodes of {self.spec}",
                     max(STALL_SECONDS, 10 * self.last_seconds)):
            if self._drains_whole(split, usable, streaming):
                out = self._drain_run(padded(params), tables, shared, normalizer, sums)
            else:
                out = self._queue_run(padded(params), tables, shared, split, usable,
                                      normalizer, collect, sums)
        out = split.gather(out)
        self.last_seconds = time.perf_counter() - started
        return self._result(n, out, sums, options, collect, center)

    # ----- plans -----
    def _drain_shape(self, normalize: bool) -> Any:
        """The drain program's shape: the same for every rollout of this env and network."""
        from neurorun.problems.jax.program import ProgramShape

        slots, chunk = ((DRAIN_SLOTS, DRAIN_CHUNK) if self.cpu
                        else (ACCELERATOR_DRAIN_SLOTS, ACCELERATOR_DRAIN_SLOTS))
        chunk = self._chunk(min(chunk, slots))
        slots = -(-slots // chunk) * chunk
        return ProgramShape(slots=slots, chunk=chunk, solutions=slots, pairs=slots, following=0,
                            normalize=normalize, collect=True, noisy=True)

    def _chunk(self, chunk: int) -> int:
        return chunk if self.largest_chunk is None else max(1, min(chunk, self.largest_chunk))

    def _drains_whole(self, split: PairSplit, usable: int, streaming: bool) -> bool:
        """Whether the drain program runs this rollout whole: every device's pairs start at
        once on its slots."""
        return (streaming and not self.one_batch and split.pairs <= usable
                and split.pairs <= self._drain_shape(False).slots)

    def _queue_shape(self, split: PairSplit, usable: int, normalize: bool,
                     collect: bool, noisy: bool) -> Any:
        from neurorun.problems.jax.program import ProgramShape

        chunk = usable if self.one_batch or not self.cpu else self._chunk(
            min(usable, QUEUE_CHUNK))
        return ProgramShape(slots=-(-usable // chunk) * chunk, chunk=chunk, solutions=split.n,
                            pairs=split.pairs, following=split.following, normalize=normalize,
                            collect=collect, noisy=noisy)

    # ----- running the programs -----
    def _queue_run(self, params: np.ndarray, tables: PairTables, shared: SharedInputs,
                   split: PairSplit, usable: int, normalizer: Any, collect: Any,
                   sums: PhaseSums) -> dict:
        """The queue program until at most the drain's slots are busy and no pair waits (or
        to the end: lock-step, one batch, an accelerator), then the drain program."""
        import jax.numpy as jnp

        shape = self._queue_shape(split, usable, normalizer is not None,
                                    collect is not None, float(shared.stdev) > 0)
        drain = self._drain_shape(shape.normalize)
        drain_program = self.programs.drain(drain)
        if not (self.one_batch or drain_program.ready):  # compiles beside the queue program
            drain_program.compile_ahead(*self.programs.drain_arguments(
                drain, params.shape[1], self._observation_size()))
        devices = len(self.devices)
        inputs = self.programs.put(stacked_inputs(
            np.broadcast_to(params, (devices, *params.shape)), *tables,
            *(np.broadcast_to(x, (devices, *x.shape)) for x in shared)))
        carry = self.programs.first(shape, usable)(inputs)
        hands_over = (self.cpu and split.streaming and not self.one_batch
                      and shape.slots > drain.slots)
        carry = self.programs.queue(shape)(inputs, carry,
                                           jnp.int32(drain.slots if hands_over else -1))
        sums.add(carry)
        out = pair_arrays(carry)
        if hands_over and bool((carry.queue.slot_pair >= 0).any()):
            hand_over = self.programs.hand_over(shape, drain)
            drain_inputs, drain_carry, origin = hand_over(inputs, carry)
            drain_carry = drain_program(drain_inputs, drain_carry, jnp.int32(-1))
            sums.add(drain_carry)
            merge_drained(out, pair_arrays(drain_carry), np.asarray(origin), tables.pair_solution)
        return out

    def _drain_run(self, params: np.ndarray, tables: PairTables, shared: SharedInputs,
                   normalizer: Any, sums: PhaseSums) -> dict:
        """A rollout whose pairs all start at once, on the drain program: slot k of a device
        runs its pair k as the drain's own solution k."""
        import jax.numpy as jnp

        shape = self._drain_shape(normalizer is not None)
        devices, pairs = tables.pair_solution.shape
        real = tables.pair_solution < params.shape[0] - 1  # (devices, T): not padding
        pair_params = np.zeros((devices, shape.pairs + 1, params.shape[1]), np.float32)
        pair_params[:, :pairs] = params[tables.pair_solution]
        solution = np.where(padded_to(real, shape.pairs, False),
                            np.arange(shape.pairs), shape.solutions).astype(np.int32)
        inputs = self.programs.put(stacked_inputs(
            pair_params, solution, padded_to(tables.pair_keys, shape.pairs, 0),
            padded_to(tables.noise_keys, shape.pairs, 0),
            *(np.broadcast_to(x, (devices, *x.shape)) for x in shared)))
        carry = self.programs.first(shape, shape.slots)(inputs)
        carry = self.programs.drain(shape)(inputs, carry, jnp.int32(-1))
        sums.add(carry)
        drained = pair_arrays(carry)
        out = {name: value[:, :pairs] for name, value in drained.items() if name != "failed"}
        failed = np.zeros((devices, params.shape[0]), bool)
        for d in range(devices):
            failed[d, tables.pair_solution[d][drained["failed"][d, :pairs]]] = True
        out["failed"] = failed
        return out

    def _say_split(self, n: int, episodes: int, split: PairSplit) -> None:
        """Say once per population size when some device has no pair (or fewer than the
        others), naming how the pairs were split."""
        counts = split.counts()
        if len(counts) > 1 and min(counts) < max(counts) and (n, episodes) not in self._said:
            self._said.add((n, episodes))
            log.info("%d solutions x %d episodes on %d devices: %s pairs each (a multiple of "
                     "%d keeps every device busy)", n, episodes, len(counts),
                     ", ".join(map(str, counts)), len(counts))

    def _result(self, n: int, out: dict[str, np.ndarray], sums: PhaseSums,
                options: RolloutOptions, collect: RunningNorm | None,
                center: np.ndarray) -> RolloutResult:
        device = self.device
        returns = torch.from_numpy(out["returns"].astype(np.float64)).to(device)
        lengths = torch.from_numpy(out["lengths"].astype(np.int64)).to(device)
        fitness, nonfinite, kept = pair_results(returns, lengths, out["finished"],
                                                out["failed"], n, options)
        if collect is not None:
            collect.update(sums.statistics(center, collect))
        return RolloutResult(
            fitness=fitness, nonfinite=nonfinite, episode_returns=returns[kept],
            episode_lengths=lengths[kept], lengths=lengths, interactions=int(out["lengths"].sum()),
            episodes=int(out["finished"].sum()), vector_steps=sums.steps,
            simulated_steps=sums.simulated, collected=collect)
