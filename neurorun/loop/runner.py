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

import dataclasses
import logging
import math
import time
from collections.abc import Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import torch
from omegaconf import DictConfig, OmegaConf, open_dict

from neurorun.algorithms.base import SearchDivergedError, population_stats
from neurorun.common import atomic
from neurorun.common.errors import ConfigError
from neurorun.common.seeding import derive_seed, rng_state, seed_everything, set_rng_state
from neurorun.common.sense import improves
from neurorun.config.checks import distributed_mode, validate_config
from neurorun.loggers import LoggerGroup, make_loggers
from neurorun.loggers.console import show_library_messages
from neurorun.loggers.videos import RunVideos
from neurorun.loop.build import (
    build_algorithm,
    build_parts,
    check_generation_fits,
    make_evaluator,
    resolve_env_backend,
    use_host_devices,
)
from neurorun.loop.objective import objective_value
from neurorun.loop.restarts import RestartSchedule, StallWatch
from neurorun.loop.signals import held, interrupts_on_signals
from neurorun.loop.status import StopLimits
from neurorun.problems.jax.compiling import compiles_running, wait_for_compiles
from neurorun.record import checkpoint
from neurorun.record.best import BestCenter
from neurorun.record.layout import (
    BEST_POLICY,
    CHECKPOINT_DIR,
    LAST_POLICY,
    STATE_FILE,
    policy_path,
    resume_command,
    run_dir_name,
    saved_config_path,
)
from neurorun.record.metrics import GenerationStatus
from neurorun.record.run_folder import RunFolder
from neurorun.record.state import RunState, check_layout

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from neurorun.config.schema import RunConfig
    from neurorun.parallel import RayEvaluator
    from neurorun.problems import EvaluationStats, Evaluator


class Callbacks:
    """Hooks for Python users (like RLlib's callbacks): subclass and override what you need."""

    def on_run_start(self, runner: Runner) -> None:
        """After everything is built (and restored, when resuming), before generation 1."""

    def on_generation_end(self, runner: Runner, generation: int, status: dict[str, Any]) -> None:
        """After each generation is logged; `status` is what the loggers received."""

    def on_run_end(self, runner: Runner, result: dict[str, Any]) -> None:
        """After the final checkpoint; `result` is what `run` returns."""


def run(cfg: DictConfig | Mapping[str, Any], *, run_dir: str | Path | None = None,
        callbacks: Callbacks | None = None) -> dict[str, Any]:
    """Run (or resume, with `resume=<run dir>`) one experiment; returns the final metrics.

    Raises:
        ConfigError: the config is invalid (raised before any environment is built), or its
            step sizes made the search diverge (the center or stdev is no longer finite).
    """
    return Runner(cfg, run_dir=run_dir, callbacks=callbacks).run()


def _default_run_dir(config: RunConfig) -> Path:
    try:
        from hydra.core.hydra_config import HydraConfig

        return Path(HydraConfig.get().runtime.output_dir)
    except (ImportError, ValueError):
        return Path(run_dir_name(config.resume, config.env.id, config.algo.name, config.seed))


class Runner:
    """One run: `Runner(cfg).run()`. Attributes: cfg (the config as composed, what the run
    folder saves), config (the typed `RunConfig` every part is built from), folder (the
    RunFolder it owns), run_dir, problem, evaluator, algorithm, loggers, limits, generation,
    best (the BestCenter), status (the last GenerationStatus, None before generation 1)."""

    def __init__(self, cfg: DictConfig | Mapping[str, Any], *, run_dir: str | Path | None = None,
                 callbacks: Callbacks | None = None):
        cfg = cfg if isinstance(cfg, DictConfig) else OmegaConf.create(dict(cfg))
        if "hydra" in cfg:  # compose_config(hydra_config=True): Hydra's settings, not the run's
            cfg = OmegaConf.masked_copy(cfg, [key for key in cfg if key != "hydra"])
        # the one read of the composed config; the host device count is set before anything
        # imports jax (XLA reads it once)
        config = validate_config(cfg, prepare=use_host_devices)
        self.cfg = cfg
        self.callbacks = callbacks or Callbacks()
        self.run_dir = Path(run_dir) if run_dir is not None else _default_run_dir(config)
        self._hide_messages = show_library_messages(quiet=config.logger.console.quiet)
        try:
            self.backend_chosen = chosen = resolve_env_backend(config)
            if chosen is not None:  # once per run; the saved config keeps the choice
                log.info("env %s runs on %s (env.backend=auto picked it; set "
                         "env.backend=gymnasium or envpool to choose)", config.env.id, chosen)
                with open_dict(cfg):  # a config given as a dict may lack the env section
                    OmegaConf.update(cfg, "env.backend", chosen, force_add=True)
                config = dataclasses.replace(
                    config, env=dataclasses.replace(config.env, backend=chosen))
            self.config = config
            if config.env.note:
                log.info("%s", config.env.note)
            # the folder's owner from here on: nothing in it is read or cleaned before
            self.folder = RunFolder(self.run_dir, resume=bool(config.resume))
        except ValueError as error:  # FolderInUseError is a ConfigError already
            self._hide_messages()
            raise error if isinstance(error, ConfigError) else ConfigError(str(error)) from error
        except BaseException:
            self._hide_messages()
            raise
        try:
            self._build(config, self.folder.state)
        except BaseException:
            self._release(discard_if_empty=True)  # a run that never started leaves no folder
            raise

    def _release(self, *, discard_if_empty: bool = False, interrupted: bool = False) -> None:
        """Give up the run folder and the console's messages (once). A run that ends waits for
        the compiles it started ahead; an interrupted one leaves them to the process's end,
        holding the folder's lock until then (a resume must not start beside it)."""
        if not interrupted:
            wait_for_compiles()
        self.folder.release(discard_if_empty=discard_if_empty,
                            at_exit=interrupted and compiles_running())
        self._hide_messages()

    def _build(self, config: RunConfig, state: RunState | None) -> None:
        """Build every part (under the folder's lock, held until ``run`` ends) and restore
        ``state`` when resuming."""
        saved_seed = None if state is None else state.seed  # None: a format-1 state
        if saved_seed is not None and saved_seed != config.seed:  # edited in the saved config
            raise ConfigError(f"resume: seed={config.seed} but the run was started with "
                              f"seed={saved_seed} (its checkpoints/state.pt); a resumed run keeps "
                              f"it (its random state is saved). Fix: seed: {saved_seed} in "
                              f"{saved_config_path(self.run_dir)}, or start a new run.")
        if config.torch_threads is not None:  # small matmuls: threads only add overhead
            torch.set_num_threads(config.torch_threads)
        seed_everything(config.seed)
        self.summary: dict[str, Any] = {}  # what the loggers are closed with
        with ExitStack() as parts:  # what was built is closed if a later part fails
            # before the env: it picks MuJoCo's OpenGL backend, read as mujoco is imported
            self.videos = RunVideos.from_settings(config.logger, self.run_dir, config.env.id)
            parts.callback(self.videos.close)
            self.problem, self.algorithm = build_parts(config)
            parts.callback(self.problem.close)
            if state is not None:  # before any env, metrics file or actor: e.g. a short center
                check_layout(state, self.algorithm, self.problem,
                             self.run_dir / CHECKPOINT_DIR / STATE_FILE)
            self.limits = StopLimits(config.generations, config.max_interactions,
                                     config.max_time, config.target_score,
                                     self.algorithm.objective_sense)
            self.distributed = distributed_mode(config, self.algorithm)
            try:  # every check before the evaluator: a bad config must not start ray actors
                self.loggers: LoggerGroup = make_loggers(
                    config.logger, self.run_dir, self.limits,
                    offsets=None if state is None else state.loggers)
                parts.callback(lambda: self.loggers.close(self.summary))
                # what the console shows and trackers record: the config as composed
                self.loggers.start(OmegaConf.to_container(self.cfg, resolve=True))
            except (ImportError, ValueError) as error:  # a tracker, damaged metrics
                raise ConfigError(str(error)) from error
            self.evaluator: Evaluator = make_evaluator(config, self.problem)
            if self.evaluator is not self.problem:
                parts.callback(self.evaluator.close)  # e.g. ray actors
            self._close = parts.pop_all().close  # run() closes them when it ends
        self.generation = 0
        self.elapsed_before = 0.0
        self.best = BestCenter()
        self.best_sample_eval: float | None = None
        self.status: GenerationStatus | None = None
        self.restart_due = False
        restart = config.restart
        self.schedule = RestartSchedule(
            restart.strategy, self.algorithm.popsize, restart.popsize_factor,
            mirrored=self.algorithm.mirrored, seed=config.seed,
            stall=StallWatch(restart.patience, restart.min_improvement,
                             self.algorithm.objective_sense))
        if state is not None:
            self._restore(state)

    # ----- state -----
    def _restore(self, state: RunState) -> None:
        self.schedule.restarts = state.restarts
        if state.restart is not None:  # None: a format-1 state, before restarts: the same popsize
            self.schedule.load_state_dict(state.restart)
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
        self.schedule.stall.history = list(state.stall_history)

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
    def _local_generation(self) -> tuple[torch.Tensor, list[EvaluationStats]]:
        """Ask, evaluate (in rounds, for the adaptive popsize) and tell; the fitness of this
        generation's samples (all of them, in order) and each round's stats."""
        evaluator = self.evaluator
        fitness, stats = [], []

        def evaluate_round(first: int) -> tuple[int, int]:
            count_before = evaluator.interaction_count
            fitness.append(evaluator.evaluate(self.algorithm.ask()))
            stats.append(evaluator.last_stats)
            return len(fitness[-1]), evaluator.interaction_count - count_before

        self.algorithm.run_rounds(evaluate_round)
        samples_fitness = torch.cat(fitness)
        self.algorithm.tell(samples_fitness)
        return samples_fitness, stats

    def _distributed_generation(self) -> tuple[torch.Tensor, list[EvaluationStats]]:
        """The actors sample their shares and update there too (parallel=ray)."""
        evaluator = cast("RayEvaluator", self.evaluator)  # distributed: checked to be ray's
        return evaluator.distributed_step(self.algorithm), [evaluator.last_stats]

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
        from neurorun.problems import EvaluationStats  # loaded with the problem by now

        self.generation += 1
        tick = time.perf_counter()
        count_before = self.evaluator.interaction_count
        try:
            samples_fitness, stats = (self._distributed_generation() if self.distributed
                                      else self._local_generation())
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
        episodes = EvaluationStats.merge(stats).episode_figures()
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
            **episodes,
            interactions=int(interactions),
            elapsed_s=self.elapsed_before + time.perf_counter() - started,
            steps_per_s=interactions / max(seconds, 1e-9),
        )
        return self.status

    def _restart(self) -> None:
        """Start the search again from a new start (the best so far stays best), with the
        popsize and step size ``restart.strategy`` gives the new attempt."""
        schedule = self.schedule
        stall = schedule.stall
        why = (f"its {schedule.attempt.generations} generations were the small regime's share"
               if schedule.exhausted() else
               f"the best center_eval of this attempt rose by at most "
               f"{stall.min_improvement:g} of its size in {stall.patience} center evaluations")
        attempt = schedule.next_attempt()
        log.info("restart %d after generation %d (%s): popsize %d, step size x %.3g",
                 schedule.restarts, self.generation, why, attempt.popsize, attempt.step_factor)
        self.algorithm = build_algorithm(self.config, self.problem, schedule.restarts, attempt)
        try:
            check_generation_fits(self.config, self.problem, self.algorithm)
        except (ValueError, RuntimeError) as error:
            raise ConfigError(f"restart {schedule.restarts} (restart.strategy="
                              f"{schedule.strategy}) grew the popsize to {attempt.popsize}: "
                              f"{error}") from error
        self.restart_due = False

    # ----- the loop -----
    def run(self) -> dict[str, Any]:
        config = self.config
        started = time.perf_counter()
        every = config.checkpoint_every
        saved = saved_config_path(self.run_dir)
        # what a later resume=<run dir> starts from (with the backend that auto chose): the
        # config as composed, its `${...}` as written
        if config.resume or self.backend_chosen or not saved.is_file():
            plain = {**OmegaConf.to_container(self.cfg, resolve=False), "resume": None,
                     "trust_code": False}  # a later resume trusts code only when told again
            atomic.atomic_write_text(OmegaConf.to_yaml(plain), saved)
        self.callbacks.on_run_start(self)
        self.loggers.begin()  # the console's config and header: everything is built by now
        reason = self.limits.reason(self.status)  # a resumed run may be done already
        result: dict[str, Any] = {}
        snapshot = None  # the state after the last finished generation, saved if one fails
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
                        self._restart()
                    status = self.step(started)
                    row = status.as_dict()
                    with held():  # a logged generation is in the snapshot a signal saves
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
            # not after a config error (a diverged search): its own config would fail again
            if snapshot is not None and not isinstance(error, ConfigError):
                try:
                    self._save_state(snapshot)
                except OSError as saving:  # a full disk: the last state written stays
                    if not (atomic.is_disk_full(saving) and atomic.is_disk_full(error)):
                        raise
                log.warning("run stopped in generation %d; continue it with `%s`",
                            snapshot.generation + 1, resume_command(self.run_dir))
            raise
        finally:
            self.summary = result
            self._close()  # the evaluator (ray actors), the loggers, the problem
            self._release(interrupted=interrupted)
        result["objective"] = objective_value(config.objective, self.run_dir, config.target_score,
                                              self.algorithm.objective_sense)
        self.callbacks.on_run_end(self, result)
        return result

