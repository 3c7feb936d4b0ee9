"""``RayEvaluator``: the Problem interface over a pool of ray actors.

The main process keeps a local Problem that holds the global state: obs stats, counters
(it counts what the actors report, ``Problem.add_counts``), the seed generator (so
``state_dict`` is the Problem's and a checkpoint resumes with either evaluator), and runs
``test_episodes``; the runner writes policy files from that Problem (``RayEvaluator.problem``).

One ``evaluate(params)``: draw the call's base seed from the local Problem's generator (as
``Problem.evaluate`` does), cut the population into sub-batches, and let the actors work
through them; sub-batch ``[first, stop)`` is evaluated with seed ``base + first``, so
solution ``j`` is seeded ``base + j`` whichever actor runs it and however the population is
cut: with deterministic envs the fitness equals the local evaluator's. Each sub-batch
carries the global obs stats of the call's start and returns its obs-stats delta; the main
process adds the deltas (the local Problem freezes stats within a call the same way).

Not equal to local evaluation: a solution that met a non-finite value gets the worst fitness
of its sub-batch (locally: of the whole call); action noise is drawn per sub-batch.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import Tensor

from neurorun.algorithms.adaptive import run_rounds
from neurorun.common.values import is_number
from neurorun.envs import backend_of
from neurorun.parallel import cluster
from neurorun.parallel.distributed import (
    Share,
    add_sums,
    plan_round,
    require_distributable,
    weight_slices,
)
from neurorun.parallel.pool import ActorPool
from neurorun.parallel.worker import EvaluationWorker
from neurorun.parallel.workload import (
    check_capacity,
    check_max_actor_restarts,
    check_workload,
    local_cpu_share,
    mix_seed,
    payload_bytes,
    resolve_num_actors,
    split_workload,
    subbatch_bounds,
)
from neurorun.problems import EvaluationStats, Problem, RunningNorm, make_problem
from neurorun.problems.evaluator import EvaluatorRecord

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from neurorun.algorithms import SearchAlgorithm

SHARE_BYTES = 48  # a share's job: six integers (draw, first, size and three seeds)


class RayEvaluator:
    """Evaluate populations on ray actors; the same interface as ``Problem``.

    Args:
        problem_kwargs: keywords of ``make_problem`` (the same for every replica).
        num_actors: an int, "max" / "num_cpus" (one per CPU), "num_gpus" (one per GPU, each
            given a GPU) or "num_devices" (min of CPUs and GPUs, sharing the GPUs).
        num_gpus_per_actor: GPUs of each actor (fractions allowed); None: 0.
        actor_config: more options of the actors (``ray.remote(...).options(**actor_config)``,
            e.g. ``num_cpus``, ``memory``, ``runtime_env``).
        num_subbatches: cut each population into this many sub-batches (a work queue).
        subbatch_size: or into sub-batches of this size; neither: one per actor.
        address: None / "": start a local ray with ``num_cpus`` CPUs; "auto" / "host:port":
            join that cluster. Already connected (e.g. ``ray.init`` by the caller): use it.
        num_cpus: CPUs of a local ray (None: all cores).
        include_dashboard: start ray's dashboard on 127.0.0.1 (local ray only).
        max_actor_restarts: how many dead actors may be replaced before evaluation stops.
        problem: the main process's Problem to hold the global state (built from
            ``problem_kwargs`` when None; it must have been built from them).
    """

    def __init__(self, problem_kwargs: Mapping[str, Any], *, num_actors: int | str = "max",
                 num_gpus_per_actor: float | None = None,
                 actor_config: Mapping[str, Any] | None = None,
                 num_subbatches: int | None = None, subbatch_size: int | None = None,
                 address: str | None = None, num_cpus: int | None = None,
                 include_dashboard: bool = False, max_actor_restarts: int = 3,
                 problem: Problem | None = None):
        check_workload(num_actors, num_subbatches, subbatch_size)  # before ray starts
        check_max_actor_restarts(max_actor_restarts)
        self.problem_kwargs = dict(problem_kwargs)
        self.num_subbatches, self.subbatch_size = num_subbatches, subbatch_size
        self.problem = make_problem(**self.problem_kwargs) if problem is None else problem
        self.last_stats = EvaluationStats()  # of the last evaluate or distributed_step
        self.last_transfer: dict[str, int] = {}
        self.pool: ActorPool | None = None
        self._replica_slots: set[int] = set()
        self._replica_ref: Any = None
        self._table_ref: Any = None
        self._replica_of: SearchAlgorithm | None = None  # held: an id could be reused
        self._owns_ray = cluster.connect(address, num_cpus=num_cpus,
                                         include_dashboard=include_dashboard)
        try:
            self.pool = self._start_pool(num_actors, num_gpus_per_actor, dict(actor_config or {}),
                                         max_actor_restarts)
        except BaseException:
            self.close()
            raise

    def _start_pool(self, num_actors: int | str, num_gpus_per_actor: float | None,
                    actor_config: dict[str, Any], max_restarts: int) -> ActorPool:
        import ray

        cpus, gpus = cluster.cluster_resources()
        count, gpus_each = resolve_num_actors(num_actors, num_cpus=cpus, num_gpus=gpus,
                                              num_gpus_per_actor=num_gpus_per_actor)
        total_envs = self.problem_kwargs.get("max_num_envs")
        envs = [None] * count if total_envs is None else [
            max(1, n) for n in split_workload(int(total_envs), count)]
        seed = self.problem_kwargs.get("seed")
        options = {"num_cpus": 1, "num_gpus": gpus_each, "max_restarts": 0, **actor_config}
        if self._owns_ray:
            share = local_cpu_share(count, cpus, actor_config)
            if share is not None:  # more actors than CPUs: they share them
                options["num_cpus"] = share
                log.warning("%d ray actors share this machine's %g CPUs (%.3g CPU each); "
                            "parallel.num_actors=max gives one per CPU", count, cpus, share)
        else:  # a joined cluster: actors on every node, as ray's SPREAD places them
            options.setdefault("scheduling_strategy", "SPREAD")
        for key in ("num_cpus", "num_gpus"):  # float('abc') said neither key nor fix
            value = options[key]
            if value is not None and (not is_number(value) or not 0 <= value < float("inf")):
                raise ValueError(f"parallel.actor_config.{key}={value!r}; expected a number "
                                 f">= 0 (what each actor holds). Fix: e.g. "
                                 f"parallel.actor_config.{key}={1 if key == 'num_cpus' else 0}")
        check_capacity(count, cpus_each=float(options["num_cpus"] or 0),
                       gpus_each=float(options["num_gpus"] or 0), num_cpus=cpus,
                       num_gpus=gpus, where="this local ray" if self._owns_ray else
                       "the joined cluster")
        remote = ray.remote(EvaluationWorker)

        threads = self.problem_kwargs.get("num_threads")
        if threads is None and backend_of(str(self.problem_kwargs["env"])).takes_threads:
            threads = max(1, int(options["num_cpus"] or 1))  # EnvPool: the actor's CPU share

        # jax envs: an actor with GPUs runs on those its node gives it (problem.devices there);
        # one on a CPU share runs on one host device
        devices = self.problem_kwargs.get("devices", "auto") if gpus_each else 1

        def make_actor(slot: int) -> Any:
            kwargs = {**self.problem_kwargs, "max_num_envs": envs[slot], "num_threads": threads,
                      "seed": None if seed is None else mix_seed(seed, slot), "devices": devices}
            return remote.options(**options).remote(kwargs)

        return ActorPool(make_actor, count, max_restarts, on_replace=self._replica_slots.discard)

    # ----- the Problem interface -----
    @property
    def num_actors(self) -> int:
        return 0 if self.pool is None else len(self.pool)

    @property
    def solution_length(self) -> int:
        return self.problem.solution_length

    @property
    def interaction_count(self) -> int:
        return self.problem.interaction_count

    @property
    def episode_count(self) -> int:
        return self.problem.episode_count

    @property
    def obs_stats(self) -> RunningNorm | None:
        return self.problem.obs_stats

    def state_dict(self) -> EvaluatorRecord:
        return self.problem.state_dict()

    def load_state_dict(self, state: EvaluatorRecord) -> None:
        self.problem.load_state_dict(state)

    def test_episodes(self, solution: Any, num_episodes: int,
                      seed: int) -> tuple[Tensor, Tensor]:
        return self.problem.test_episodes(solution, num_episodes, seed)

    def draw_seed(self) -> int:
        """The next base seed of an evaluate call, from the local Problem's generator."""
        return self.problem.draw_seed()

    def _obs_state(self) -> dict[str, Any] | None:
        stats = self.problem.obs_stats
        return None if stats is None else stats.state_dict()

    def evaluate(self, params: Any, seed: int | None = None) -> Tensor:
        """Fitness ``(P,)`` of ``params (P, D)``: sub-batches on the actors, in a work queue."""
        import ray

        started = time.perf_counter()
        params = torch.as_tensor(params)
        params = params[None] if params.dim() == 1 else params
        if params.dim() != 2 or params.shape[1] != self.solution_length:
            raise ValueError(f"params of shape {tuple(params.shape)}; expected (P, "
                             f"{self.solution_length}) (P solutions of solution_length)")
        base = self.draw_seed() if seed is None else int(seed)
        array = params.detach().to("cpu", torch.float32).numpy()
        bounds = subbatch_bounds(len(array), num_actors=self.num_actors,
                                 num_subbatches=self.num_subbatches,
                                 subbatch_size=self.subbatch_size)
        obs_state = self._obs_state()
        obs_ref = None if obs_state is None else ray.put(obs_state)
        cut = self.problem.episode_cut()  # a curriculum's, from this process's count

        def job(first: int, stop: int):
            return lambda slot: ("evaluate", (array[first:stop], base + first,
                                              mix_seed(base, first), obs_ref, cut))

        results = self._run([job(f, s) for f, s in bounds], obs_state)
        fitness = torch.cat([torch.tensor(r["fitness"]) for r in results])
        self.last_transfer["bytes_sent"] += payload_bytes(array)
        self._record(results, started)
        return fitness.to(params.dtype)

    def _run(self, jobs: list[Any], obs_state: dict[str, Any] | None) -> list[dict[str, Any]]:
        """Run jobs on the pool, merge their obs deltas and counters into the local Problem."""
        if self.pool is None:
            raise RuntimeError("this RayEvaluator is closed; build a new one")
        results = self.pool.run(jobs)
        stats = self.problem.obs_stats
        for result in results:
            if stats is not None and result["obs_delta"] is not None:
                stats.update(RunningNorm.from_state_dict(result["obs_delta"]))
        # the obs stats go through ray's object store once (ray.put), not once per job
        self.last_transfer = {
            "bytes_sent": payload_bytes(obs_state),
            "bytes_received": sum(payload_bytes([r["fitness"], r["obs_delta"], r.get("norms")])
                                  for r in results)}
        return results

    def _record(self, results: list[dict[str, Any]], started: float) -> None:
        stats = EvaluationStats.merge([r["stats"] for r in results])
        self.problem.add_counts(stats)
        self.last_stats = dataclasses.replace(stats, eval_time_s=time.perf_counter() - started)

    def distributed_step(self, algo: SearchAlgorithm) -> Tensor:
        """One generation of distributed mode (see ``neurorun.parallel.distributed``): actors
        regenerate and evaluate their shares, the main process weighs the whole generation,
        actors return weighted noise sums, ``algo`` updates here. Returns the fitness of every
        sample of the generation, in order."""
        import ray

        require_distributable(algo)
        started = time.perf_counter()
        sent = 0
        if self._replica_of is not algo:  # a new algorithm: every actor gets its replica again
            replica = algo.replica()
            self._replica_ref = ray.put(replica)
            table = getattr(algo.noise, "table", None)
            self._table_ref = None if table is None else ray.put(table.numpy())
            self._replica_of = algo
            self._replica_slots.clear()  # the pool's on_replace holds this set
            sent += payload_bytes(vars(replica)) + payload_bytes(table)
        draw = algo.begin_generation()
        state = {k: v.detach().cpu() for k, v in algo.sampling_state().items()}
        state_ref = ray.put(state)
        sent += payload_bytes(state)
        shares: list[Share] = []
        slots: list[int] = []
        results: list[dict[str, Any]] = []
        transfers: list[dict[str, int]] = []

        def evaluate_round(first: int) -> tuple[int, int]:
            # a curriculum's cut after the rounds before, as a local run's evaluate calls count
            cut = self.problem.episode_cut(self.problem.interaction_count + sum(
                r["stats"].num_interactions for r in results))
            round_shares, round_results = self._sample_round(algo, draw, state_ref, first, cut)
            shares.extend(round_shares)
            results.extend(round_results)
            slots.extend(self.pool.last_slots)
            transfers.append(self.last_transfer)
            return (sum(share.size for share in round_shares),
                    sum(r["stats"].num_interactions for r in round_results))

        run_rounds(algo, evaluate_round)  # adaptive popsize: rounds until enough interactions
        sent += sum(t["bytes_sent"] for t in transfers) + SHARE_BYTES * len(shares)
        received = sum(t["bytes_received"] for t in transfers)
        fitness = torch.from_numpy(np.concatenate([r["fitness"] for r in results])).to(algo.dtype)
        norms = (torch.from_numpy(np.concatenate([r["norms"] for r in results]))
                 if algo.NEEDS_NORMS else None)
        weights, shaped = algo.generation_weights(fitness, norms, len(fitness))
        slices = weight_slices(weights, algo.SUMS, shares)
        actors = sorted(set(slots))
        mine = {slot: [i for i, s in enumerate(slots) if s == slot] for slot in actors}

        def sums_job(slot: int) -> Any:
            indices = mine[slot]
            return lambda replacement: ("weighted_sums", (
                *self._replica_for(replacement), draw,
                [(shares[i].first, shares[i].size) for i in indices],
                [slices[i] for i in indices]))

        parts = self.pool.run([sums_job(slot) for slot in actors], on=actors)
        algo.conclude(add_sums(parts), weights, shaped, fitness)
        self.last_transfer = {"bytes_sent": sent + payload_bytes(slices),
                              "bytes_received": received + payload_bytes(parts)}
        self._record(results, started)
        return fitness

    def _sample_round(self, algo: SearchAlgorithm, draw: int, state_ref: Any,
                      first: int, cut: int | None) -> tuple[list[Share], list[dict[str, Any]]]:
        """Distributed mode, step 2, for a round of ``popsize`` samples from index ``first``:
        the actors sample and evaluate its shares, episodes cut after ``cut`` steps. The round
        draws a base seed and seeds share ``[first + f, ...)`` with ``base + f``, as
        ``evaluate`` seeds a population."""
        import ray

        shares = plan_round(algo, first, num_actors=self.num_actors,
                            num_subbatches=self.num_subbatches, subbatch_size=self.subbatch_size)
        base = self.draw_seed()
        obs_state = self._obs_state()
        obs_ref = None if obs_state is None else ray.put(obs_state)

        def job(share: Share) -> Any:
            offset = share.first - first
            return lambda slot: ("sample_and_evaluate", (
                *self._replica_for(slot), state_ref, draw, share.first, share.size,
                base + offset, mix_seed(base, offset), obs_ref, cut))

        return shares, self._run([job(share) for share in shares], obs_state)

    def _replica_for(self, slot: int) -> tuple[Any, Any]:
        """(replica, noise table) refs the first time an actor slot gets a job, else Nones."""
        if slot in self._replica_slots:
            return None, None
        self._replica_slots.add(slot)
        return self._replica_ref, self._table_ref

    # ----- lifecycle -----
    def close(self) -> None:
        """End the actors and, when this evaluator started ray, ray (idempotent)."""
        if self.pool is not None:
            self.pool.kill()
            self.pool = None
        if self._owns_ray:
            cluster.disconnect()
            self._owns_ray = False
        self.problem.close()

    def __enter__(self) -> RayEvaluator:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()
