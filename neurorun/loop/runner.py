"""The Runner: builds problem, algorithm and loggers from a config and runs generations.

    from neurorun.loop.runner import run
    metrics = run(cfg)            # cfg: the composed config (see neurorun/conf/config.yaml)

One generation: ask, evaluate (asking for more while `algo.num_interactions` is not reached,
up to `algo.popsize_max`), tell, evaluate the center on seeded test episodes every
`eval_every` generations, log, a video of the center every `logger.video_every`, checkpoint.
The run stops at `generations`, `max_interactions`, `max_time` or when the center's evaluation
reaches `target_score`.
`run` needs no Hydra; `neurorun.cli.app` only composes the config and calls it.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig

from neurorun.algorithms.divergence import SearchDivergedError
from neurorun.algorithms.fitness import population_stats
from neurorun.common import atomic
from neurorun.common.errors import ConfigError
from neurorun.common.seeding import derive_seed, rng_state, set_rng_state
from neurorun.common.sense import improves
from neurorun.loop.build import build_algorithm
from neurorun.loop.callbacks import Callbacks
from neurorun.loop.generation import search_step
from neurorun.loop.objective import objective_value
from neurorun.loop.parts import RunParts
from neurorun.loop.restarts import RestartSchedule, restart
from neurorun.loop.signals import deferred_signals, interrupts_on_signals
from neurorun.record import checkpoint
from neurorun.record.best import BestCenter
from neurorun.record.layout import (
    BEST_POLICY,
    LAST_POLICY,
    policy_path,
    resume_command,
)
from neurorun.record.metrics import GenerationStatus
from neurorun.record.state import RunState

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from neurorun.config.schema import RunConfig


def run(cfg: DictConfig | Mapping[str, Any], *, run_dir: str | Path | None = None,
        callbacks: Callbacks | None = None) -> dict[str, Any]:
    """Run (or resume, with `resume=<run dir>`) one experiment; returns the final metrics.

    Raises:
        ConfigError: the config is invalid (raised before any environment is built), or its
            step sizes made the search diverge (the center or stdev is no longer finite).
    """
    return Runner(cfg, run_dir=run_dir, callbacks=callbacks).run()


class Runner(RunParts):
    """One run: `Runner(cfg).run()`. Its parts (`RunParts`: config, folder, run_dir,
    problem, evaluator, algorithm, loggers, limits) and its progress: generation, best (the
    BestCenter), status (the last GenerationStatus, None before generation 1)."""

    def __init__(self, cfg: DictConfig | Mapping[str, Any], *, run_dir: str | Path | None = None,
                 callbacks: Callbacks | None = None):
        self.callbacks = callbacks or Callbacks()
        super().__init__(cfg, run_dir=run_dir)

    def _build(self, config: RunConfig, state: RunState | None) -> None:
        """The parts, a run's progress from its start, and ``state`` restored when resuming."""
        super()._build(config, state)
        self.generation = 0
        self.elapsed_before = 0.0
        self.best = BestCenter()
        self.best_sample_eval: float | None = None
        self.status: GenerationStatus | None = None
        self.restart_due = False
        self.schedule = RestartSchedule.of_run(config, self.algorithm)
        if state is not None:
            self._restore(state)

    # ----- state -----
    def _restore(self, state: RunState) -> None:
        self.schedule.restore(state.restarts, state.restart, state.stall_history)
        if self.schedule.restarts:  # the attempt's own algorithm (e.g. its noise table)
            self.algorithm = build_algorithm(self.config, self.problem, self.schedule.restarts,
                                             self.schedule.attempt)
        self.algorithm.load_state_dict(state.algorithm)
        self.evaluator.load_state_dict(state.problem)
        set_rng_state(state.rng)
        self.generation = state.generation
        self.elapsed_before = float(state.elapsed_s)
        self.best = BestCenter.from_state_dict(state.best)
        self.best_sample_eval = state.best_sample_eval
        self.status = GenerationStatus.from_dict(state.status) if state.status else None
        self.restart_due = state.restart_due

    def _state(self, elapsed: float) -> RunState:
        return RunState(
            generation=self.generation, elapsed_s=elapsed, algorithm=self.algorithm.state_dict(),
            problem=self.evaluator.state_dict(), rng=rng_state(), best=self.best.state_dict(),
            best_sample_eval=self.best_sample_eval,
            status={} if self.status is None else self.status.as_dict(),
            loggers=self.loggers.offsets(), seed=self.config.seed,
            restarts=self.schedule.restarts, restart=self.schedule.state_dict(),
            restart_due=self.restart_due, stall_history=list(self.schedule.stall.history))

    def save_checkpoint(self, elapsed: float) -> None:
        meta = checkpoint.policy_meta(self.problem, self.config.env.env_config,
                                      self.config.network.network_args)
        policies = checkpoint.run_policy_files(
            self.problem, self.run_dir, meta, center=self.algorithm.center,
            generation=self.generation,
            center_eval=None if self.status is None else self.status.center_eval, best=self.best)
        # one unit: last.*, best.* and state.pt always belong to the same generation
        self._save_state(self._state(elapsed), policies)

    def _save_state(self, state: RunState,
                    with_files: list[tuple[Path, atomic.Write]] = ()) -> None:
        """Write the resume state (with ``with_files``, as one unit) once the metric rows it
        points past are on disk."""
        self.loggers.sync()
        atomic.atomic_write_all([*with_files, checkpoint.state_file(state, self.run_dir)])

    # ----- one generation -----
    @property
    def test_seed(self) -> int:
        """The seed of the center's test episodes: its evaluation's, and its videos'."""
        return derive_seed(self.config.seed, "evaluation")

    def _evaluate_center(self) -> tuple[float | None, float | None]:
        """The center's mean return and mean episode length on its test episodes (None, None:
        not evaluated in this generation)."""
        every = self.config.eval_every
        if every <= 0 or self.generation % every:
            return None, None
        returns, lengths = self.problem.test_episodes(
            self.algorithm.center, self.config.eval_episodes, self.test_seed)
        return float(returns.double().mean()), float(lengths.double().mean())

    def step(self, started: float) -> GenerationStatus:
        """Run one generation; returns its status."""
        self.generation += 1
        tick = time.perf_counter()
        count_before = self.evaluator.interaction_count
        try:
            samples_fitness, stats = search_step(self.algorithm, self.evaluator,
                                                 self.distributed)
        except SearchDivergedError as error:  # the config's step size: resuming would diverge again
            raise ConfigError(str(error)) from error
        center_eval, center_eval_length = self._evaluate_center()
        seconds = time.perf_counter() - tick
        sense = self.algorithm.objective_sense
        population = population_stats(samples_fitness, sense)
        if improves(sense, population["pop_best_eval"], self.best_sample_eval):
            self.best_sample_eval = population["pop_best_eval"]
        # a non-finite center evaluation (a NaN or infinite reward) is never best nor solved
        nonfinite = center_eval is not None and not math.isfinite(center_eval)
        self.best.offer(sense, center_eval, self.generation, self.algorithm.center,
                        self.problem.obs_stats)  # the statistics the center was evaluated with
        interactions = self.evaluator.interaction_count - count_before
        self.status = GenerationStatus(
            generation=self.generation,
            **population,  # popsize, mean_eval, median_eval, pop_best_eval
            best_sample_eval=self.best_sample_eval,
            center_eval=center_eval,
            center_eval_length=center_eval_length,
            nonfinite_center_evals=int(nonfinite) + (
                0 if self.status is None else self.status.nonfinite_center_evals),
            restarts=self.schedule.restarts,
            total_interaction_count=int(self.evaluator.interaction_count),
            total_episode_count=int(self.evaluator.episode_count),
            stdev_mean=float(self.algorithm.status["stdev_mean"]),
            **stats.episode_figures(),
            interactions=int(interactions),
            elapsed_s=self.elapsed_before + time.perf_counter() - started,
            steps_per_s=interactions / max(seconds, 1e-9),
        )
        return self.status

    # ----- the loop -----
    def run(self) -> dict[str, Any]:
        config = self.config
        started = time.perf_counter()
        every = config.checkpoint_every
        self._save_config()
        self.callbacks.on_run_start(self)
        self.loggers.begin()  # the console's config and header: everything is built by now
        reason = self.limits.reason(self.status)  # a resumed run may be done already
        result: dict[str, Any] = {}
        snapshot = None  # the state after the last finished generation, saved if one fails
        first = self.generation  # where this run (or resume) started
        interrupted = False  # a signal or Ctrl-C stopped it
        try:
            # SIGTERM, SIGUSR1, SIGHUP end the run like Ctrl-C; patient: the first waits for a
            # main thread busy in compiled code (a long evaluation) to save the last generation
            with interrupts_on_signals(patient=True):
                # no copies: every part's state_dict gives values a generation never writes
                # into (updates assign new tensors), so a snapshot stays as it was taken
                snapshot = self._state(self.elapsed_before + time.perf_counter() - started)
                while reason is None:
                    if self.restart_due:  # a resumed run makes a restart that was due, too
                        self.algorithm = restart(self.schedule, config, self.problem,
                                                 self.generation)
                        self.restart_due = False
                    status = self.step(started)
                    row = status.as_dict()
                    # a logged generation is in the snapshot a signal saves
                    with deferred_signals():
                        self.loggers.log(self.generation, row)
                        reason = self.limits.reason(status)
                        self.restart_due = self.schedule.restart_due(status.popsize,
                                                                     status.center_eval)
                        snapshot = self._state(status.elapsed_s)
                    if self.videos.due(self.generation, last=reason is not None):
                        self.videos.record(self.generation, self.problem,
                                           self.algorithm.center, self.test_seed, self.loggers)
                    self.callbacks.on_generation_end(self, self.generation, row)
                    if reason is None and every > 0 and self.generation % every == 0:
                        self.save_checkpoint(status.elapsed_s)
                elapsed = self.elapsed_before + time.perf_counter() - started
                self.save_checkpoint(elapsed if self.status is None else self.status.elapsed_s)
            done = {} if self.status is None else self.status.as_dict()
            result = {**done, "stop_reason": reason, "run_dir": str(self.run_dir),
                      "best_policy": str(policy_path(self.run_dir, BEST_POLICY, ".pt")),
                      "last_policy": str(policy_path(self.run_dir, LAST_POLICY, ".pt")),
                      "best_center_eval": self.best.score}
        except BaseException as error:  # an error or Ctrl-C: keep what finished generations did
            interrupted = isinstance(error, KeyboardInterrupt)
            # after a config error (a diverged search) too, once a generation finished: its
            # generations are kept, though the search they reached may be what diverged
            config_error = isinstance(error, ConfigError)
            if snapshot is not None and (snapshot.generation > first or not config_error):
                try:
                    self._save_state(snapshot)
                except OSError as saving:  # a full disk: the last state written stays
                    if not (atomic.is_disk_full(saving) and atomic.is_disk_full(error)):
                        raise
                if config_error:
                    log.warning("run stopped in generation %d, its state saved; with the fix "
                                "below, a new run starts afresh, and `%s` with it continues "
                                "from generation %d's search", snapshot.generation + 1,
                                resume_command(self.run_dir), snapshot.generation)
                else:
                    log.warning("run stopped in generation %d; continue it with `%s`",
                                snapshot.generation + 1, resume_command(self.run_dir))
            raise
        finally:
            self.summary = result
            self._close()  # the evaluator (ray actors), the loggers, the problem
            self._release(interrupted=interrupted)
        result["objective"] = objective_value(config.objective, self.run_dir, config.target_score,
                                              self.algorithm.objective_sense,
                                              config.max_interactions)
        self.callbacks.on_run_end(self, result)
        return result

