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

import contextlib
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import Tensor

from neurorun.nets.arrays import ArrayPolicy
from neurorun.problems.inline_lapack import InlineLapack
from neurorun.problems.options import RolloutOptions
from neurorun.problems.rollout import RolloutResult, pair_results
from neurorun.problems.running_norm import RunningNorm
from neurorun.problems.schedule import pair_seeds

log = logging.getLogger(__name__)
STAGE_FACTOR = 2  # each stage's batch is this many times smaller than the last (CPU only)
MIN_STAGE_SLOTS = 8  # no stage is smaller (a step of 8 envs costs a few of 1 on the CPU)
STALL_SECONDS = 120  # a compile (or evaluation) this long is said to be still running


class JaxRollout:
    """Compiled rollouts of one env and one network on ``devices`` (see the module docstring).

    Args:
        make_batch: ``() -> env`` vectorized over reset keys (``batched_jax_env``).
        spec: the env spec, for messages.
        policy: the array form of the network.
        device: torch device of the results (a CUDA device: jax's GPU runs the programs).
        devices: the jax devices that share each evaluation (None: jax's first device).
    """

    def __init__(self, make_batch: Any, spec: str, policy: ArrayPolicy, device: torch.device,
                 devices: Sequence[Any] | None = None):
        import jax
        from jax.sharding import Mesh

        from neurorun.envs.jax_env import use_compilation_cache

        use_compilation_cache()
        self.spec, self.policy, self.device = spec, policy, device
        self.env = make_batch()
        self.devices = list(devices or jax.devices()[:1])
        if len(self.devices) > 1 and self.devices[0].platform == "cpu":
            self.env = InlineLapack(self.env)
        self.mesh = Mesh(np.array(self.devices), (AXIS,))
        self._size: int | None = None
        self._compiled: dict[tuple[str, Any], Any] = {}
        self._said: set[tuple[int, int]] = set()  # splits said to leave a device idle
        self.shrinks = True  # move the last busy slots into smaller batches (stages; CPU)
        self.compile_seconds = 0.0  # spent compiling (or loading from jax's cache) so far
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
                 population: bool = True) -> RolloutResult:
        """Run each of ``params (n, D)`` for ``options.num_episodes`` episodes on ``slots``
        env slots in all (the arguments of :func:`neurorun.problems.rollout.rollout`);
        ``population``: a generation's (not a center's test episodes: their split is no news)."""
        import jax
        import jax.numpy as jnp

        from neurorun.problems.jax_program import Static

        started = time.perf_counter()
        n, episodes = params.shape[0], options.num_episodes
        if not streaming and slots < n:
            raise ValueError(f"lock-step rollout of {n} solutions needs as many env slots; "
                             f"got {slots}")
        split = split_pairs(n, episodes, len(self.devices), streaming)
        if population:
            self._say_split(n, episodes, split)
        stdev = options.action_noise_stdev or 0.0
        static = Static(slots=split.slots(slots), solutions=n, pairs=split.pairs,
                      following=split.following, normalize=normalizer is not None,
                      collect=collect is not None, noisy=stdev > 0)
        size = self._observation_size()
        scale, shift = (normalizer.affine("cpu", torch.float32) if normalizer is not None
                        else (torch.ones(size), torch.zeros(size)))
        tables = self._put(split.tables(seed, noise_seed), sharded=True)
        shared = self._put(SharedInputs(_padded(params), np.zeros(size, np.float32),
                                        scale.numpy(), shift.numpy(), np.float32(stdev)))
        carry, (first_obs, busy) = self._program("start", static)(shared, tables)
        center = jnp.asarray(np.asarray(first_obs).sum(0) / max(int(np.asarray(busy).sum()), 1),
                             jnp.float32)
        shared = shared._replace(center=self._put(center))
        totals = _Totals(size)
        with watched(f"evaluating {n} solutions x {episodes} episodes of {self.spec}",
                     max(STALL_SECONDS, 10 * self.last_seconds)):
            carry = self._stages(static, shared, tables, carry, totals)
        out = jax.device_get({"returns": carry.returns, "lengths": carry.lengths,
                              "finished": carry.queue.finished,
                              "failed": carry.queue.failed})
        out = split.gather({name: np.asarray(value) for name, value in out.items()})
        out["center"] = np.asarray(center)
        self.last_seconds = time.perf_counter() - started
        return self._result(n, out, totals, options, collect)

    def _stages(self, static: Any, shared: SharedInputs, tables: Any, carry: Any,
                totals: _Totals) -> Any:
        """Run the stages (smaller batches once few slots are busy) until no pair is left."""
        import dataclasses

        import jax.numpy as jnp

        while True:
            smaller = self._smaller(static.slots)
            carry = self._program("stage", static)(shared, tables, carry,
                                                  jnp.int32(smaller or -1))
            totals.add(static.slots, carry)
            if not smaller or not bool((carry.queue.slot_pair >= 0).any()):
                break
            carry = self._program("shrink", (static, smaller))(carry)
            static = dataclasses.replace(static, slots=smaller)
        return carry

    def _say_split(self, n: int, episodes: int, split: PairSplit) -> None:
        """Say once per population size when some device has no pair (or fewer than the
        others), naming how the pairs were split."""
        counts = split.counts()
        if len(counts) > 1 and min(counts) < max(counts) and (n, episodes) not in self._said:
            self._said.add((n, episodes))
            log.info("%d solutions x %d episodes on %d devices: %s pairs each (a multiple of "
                     "%d keeps every device busy)", n, episodes, len(counts),
                     ", ".join(map(str, counts)), len(counts))

    def _put(self, tree: Any, sharded: bool = False) -> Any:
        """``tree`` on the devices: each leaf's first axis split over them, or replicated."""
        import jax
        from jax.sharding import NamedSharding
        from jax.sharding import PartitionSpec as P

        return jax.device_put(tree, NamedSharding(self.mesh, P(AXIS) if sharded else P()))

    def _smaller(self, slots: int) -> int:
        """The next stage's batch per device (0: none; accelerators keep one batch: there a
        smaller one costs about the same per step)."""
        smaller = slots // STAGE_FACTOR
        if not self.shrinks or self.devices[0].platform != "cpu" or smaller < MIN_STAGE_SLOTS:
            return 0
        return smaller

    def _program(self, kind: str, static: Any) -> Any:
        """The jitted program ``kind`` (start, stage or shrink) of ``static``, each device
        running its share (``shard_map`` over the devices), compiled at its first call."""
        key = (kind, static)
        if key not in self._compiled:
            self._compiled[key] = _Compiled(self._traced(kind, static), self, kind, static)
        return self._compiled[key]

    def _traced(self, kind: str, static: Any) -> Any:
        import jax
        from jax.sharding import PartitionSpec as P

        from neurorun.problems import jax_program

        env, policy = self.env, self.policy

        def inputs(shared: SharedInputs, tables: Tables) -> jax_program.Inputs:
            return jax_program.Inputs(shared.params, *_local(tables), shared.center,
                                      shared.scale, shared.shift, shared.stdev)

        if kind == "start":
            def body(shared: Any, tables: Any) -> Any:
                return _stacked(jax_program.start(env, policy, static, inputs(shared, tables)))
            specs = (P(), P(AXIS))
        elif kind == "stage":
            def body(shared: Any, tables: Any, carry: Any, limit: Any) -> Any:
                return _stacked(jax_program.stage(env, policy, static, inputs(shared, tables),
                                                  _local(carry), limit))
            specs = (P(), P(AXIS), P(AXIS), P())
        else:
            def body(carry: Any) -> Any:
                return _stacked(jax_program.shrink(_local(carry), static[1]))
            specs = (P(AXIS),)
        return jax.jit(jax.shard_map(body, mesh=self.mesh, in_specs=specs,
                                     out_specs=P(AXIS), check_vma=False))

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


AXIS = "devices"  # the mesh axis the pairs are split over


class SharedInputs(NamedTuple):
    """What every device reads whole (replicated)."""

    params: Any  # (n + 1, D): every solution's parameters, then a zero row (padding pairs)
    center: Any  # (O,)
    scale: Any  # (O,)
    shift: Any  # (O,)
    stdev: Any  # ()


class Tables(NamedTuple):
    """Each device's own pairs: (devices, T, ...) arrays, a device's row its share."""

    pair_solution: Any  # (devices, T) int32, n for padding
    pair_keys: Any  # (devices, T, 2) uint32 reset keys
    noise_keys: Any  # (devices, T, 2) uint32 action-noise keys


@dataclass(frozen=True)
class PairSplit:
    """How the pairs of ``n`` solutions x ``episodes`` are shared by the devices.

    Streaming: pair k (episode-major, ``k = e * n + j``) goes to device ``k % devices``, so
    each device's share is as even as the count allows, and each device runs its share as a
    queue. Lock-step: solution j goes to device ``j // m`` (``m = ceil(n / devices)``) with
    all its episodes; each of the device's slots runs one solution's episodes in turn.
    ``pair_index[d, t]`` is the pair of device d's t-th pair (-1: padding).
    """

    n: int
    episodes: int
    pair_index: np.ndarray  # (devices, T) int64
    following: int  # lock-step: m (a slot's next pair is its pair + m); 0: streaming

    @property
    def pairs(self) -> int:
        return self.pair_index.shape[1]

    def counts(self) -> list[int]:
        return (self.pair_index >= 0).sum(1).tolist()

    def slots(self, total: int) -> int:
        """Env slots per device for ``total`` slots in all."""
        if self.following:
            return self.following
        devices = self.pair_index.shape[0]
        return max(1, min(-(-min(total, self.n * self.episodes) // devices), self.pairs))

    def tables(self, seed: int, noise_seed: int) -> Tables:
        """Each pair's solution, reset key (its episode seed's: ``schedule.pair_seeds``) and
        action-noise key, per device."""
        import jax

        from neurorun.envs.jax_env import episode_keys

        valid = self.pair_index >= 0
        index = np.where(valid, self.pair_index, 0)
        seeds = pair_seeds(int(seed), index, self.n)
        keys = episode_keys(seeds).reshape(*seeds.shape, 2)
        noise = jax.vmap(jax.random.fold_in, in_axes=(None, 0))(
            jax.random.PRNGKey(int(noise_seed)), (seeds & 0xFFFFFFFF).astype(np.uint32).ravel())
        return Tables(np.where(valid, index % self.n, self.n).astype(np.int32), keys,
                      np.asarray(noise).reshape(*seeds.shape, 2))

    def gather(self, out: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Per-device results (devices, T) as per-pair arrays (n * episodes,) in pair order,
        and ``failed`` (devices, n + 1) as (n,)."""
        valid = self.pair_index >= 0
        gathered = {}
        for name in ("returns", "lengths", "finished"):
            values = np.zeros(self.n * self.episodes, out[name].dtype)
            values[self.pair_index[valid]] = out[name][valid]
            gathered[name] = values
        gathered["failed"] = out["failed"][:, :self.n].any(0)
        return gathered


def split_pairs(n: int, episodes: int, devices: int, streaming: bool) -> PairSplit:
    """The pairs of each device (see PairSplit)."""
    total = n * episodes
    if streaming:
        per = -(-total // devices)
        index = np.arange(per * devices).reshape(per, devices).T
        return PairSplit(n, episodes, np.where(index < total, index, -1), 0)
    m = -(-n // devices)
    solution = np.arange(devices)[:, None] * m + np.arange(m)[None, :]  # (devices, m)
    index = np.arange(episodes)[None, :, None] * n + solution[:, None, :]  # (devices, E, m)
    index = np.where(solution[:, None, :] < n, index, -1).reshape(devices, episodes * m)
    return PairSplit(n, episodes, index, m)


def _padded(params: Tensor) -> np.ndarray:
    """``(n + 1, D)`` float32: the parameters and the zero row of padding pairs."""
    rows = params.detach().to("cpu", torch.float32).numpy()
    return np.concatenate([rows, np.zeros((1, rows.shape[1]), np.float32)])


def _local(tree: Any) -> Any:
    """A device's block of per-device arrays (leading axis 1 under shard_map) without it."""
    import jax

    return jax.tree_util.tree_map(lambda x: x[0], tree)


def _stacked(tree: Any) -> Any:
    """A device's results with the leading device axis that out_specs concatenates."""
    import jax

    return jax.tree_util.tree_map(lambda x: x[None], tree)


@contextlib.contextmanager
def watched(what: str, after: float) -> Iterator[None]:
    """Say every ``after`` seconds that ``what`` still runs: a compile or an evaluation that
    stalls is visible, not silent."""
    done = threading.Event()
    started = time.perf_counter()

    def watch() -> None:
        while not done.wait(after):
            log.warning("%s: still running after %.0f s (jax's CPU compiles big physics "
                        "programs for minutes; with no CPU in use, it is stuck: stop it with "
                        "Ctrl-C and report the env, batch and device count)", what,
                        time.perf_counter() - started)

    thread = threading.Thread(target=watch, name="neurorun-watch", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()


class _Compiled:
    """A jitted program, compiled at its first call; env programs report their compilation,
    which takes from seconds to minutes on a CPU."""

    def __init__(self, function: Any, owner: JaxRollout, kind: str, static: Any):
        self.function, self.owner, self.kind, self.static = function, owner, kind, static
        self.ready = False

    def __call__(self, *args: Any) -> Any:
        if self.ready:
            return self.function(*args)

        static, reported = self.static, self.kind != "shrink"
        what = ("the first env states" if self.kind == "start" else "the evaluation")
        devices = self.owner.devices
        if reported:
            log.info("compiling %s of %s for %d env slots x %d %s device(s) (%d pairs each), "
                     "once per batch shape...", what, self.owner.spec, static.slots,
                     len(devices), devices[0].platform, static.pairs)
        started = time.perf_counter()
        with watched(f"compiling {what} of {self.owner.spec}", STALL_SECONDS):
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
        steps = np.asarray(steps)  # (devices,): each device's vector steps, side by side
        self.steps += int(steps.max())
        self.simulated += int(steps.sum()) * slots
        self.count += float(count)
        self.shifted += np.asarray(shifted, np.float64).sum((0, 1))
        self.squares += np.asarray(squares, np.float64).sum((0, 1))

    def statistics(self, center: np.ndarray, like: RunningNorm) -> RunningNorm:
        """The observation statistics of the sums of ``obs - center``."""
        center = center.astype(np.float64)
        count, shifted = self.count, self.shifted
        return RunningNorm.from_state_dict({
            "size": like.size, "min_variance": like.min_variance,
            "count": torch.tensor(count), "sum": torch.from_numpy(shifted + count * center),
            "sum_of_squares": torch.from_numpy(self.squares + 2 * center * shifted
                                               + count * center * center)})
