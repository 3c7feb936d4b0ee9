"""A run's parts, built from its config under its run folder's lock: the problem, the
algorithm, the evaluator, the loggers and the videos; the folder and the console's library
messages given up once when the run ends."""

from __future__ import annotations

import copy
import json
import logging
import math
from collections.abc import Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from omegaconf import DictConfig, OmegaConf

from neurorun.common import atomic
from neurorun.common.errors import ConfigError
from neurorun.common.seeding import seed_everything
from neurorun.common.sense import reached
from neurorun.config.checks import distributed_mode, validate_config
from neurorun.envs.backends import parse_spec
from neurorun.loggers import LoggerGroup, make_loggers
from neurorun.loggers.console import show_library_messages
from neurorun.loggers.videos import RunVideos
from neurorun.loop.build import build_parts, choose_env_backend, make_evaluator, use_host_devices
from neurorun.loop.status import StopLimits
from neurorun.problems.jax.compiling import compiles_running, wait_for_compiles
from neurorun.record.checkpoint import saved_policy_meta
from neurorun.record.layout import CHECKPOINT_DIR, STATE_FILE, run_dir_name, saved_config_path
from neurorun.record.run_folder import RunFolder
from neurorun.record.state import RunState, check_layout

if TYPE_CHECKING:
    from neurorun.config.schema import RunConfig
    from neurorun.problems import Evaluator


def _default_run_dir(config: RunConfig) -> Path:
    try:
        from hydra.core.hydra_config import HydraConfig

        return Path(HydraConfig.get().runtime.output_dir)
    except (ImportError, ValueError):
        return Path(run_dir_name(config.resume, config.env.id, config.algo.name, config.seed))


class RunParts:
    """Attributes: config (the typed `RunConfig` every part is built from, read once from
    the composed config, which `composed()` gives back as written), backend_chosen (what
    env.backend=auto picked, or None: the saved config records it, `composed()`), folder (the
    RunFolder it owns), run_dir, problem, algorithm, evaluator, loggers, videos, limits,
    distributed."""

    def __init__(self, cfg: DictConfig | Mapping[str, Any], *, run_dir: str | Path | None = None):
        cfg = cfg if isinstance(cfg, DictConfig) else OmegaConf.create(dict(cfg))
        if "hydra" in cfg:  # compose_config(hydra_config=True): Hydra's settings, not the run's
            cfg = OmegaConf.masked_copy(cfg, [key for key in cfg if key != "hydra"])
        # the one read of the composed config; the host device count is set before anything
        # imports jax (XLA reads it once)
        config = validate_config(cfg, prepare=use_host_devices)
        self._composed = OmegaConf.to_container(cfg, resolve=False)
        self.run_dir = Path(run_dir) if run_dir is not None else _default_run_dir(config)
        self._restore_console = show_library_messages(quiet=config.logger.console.quiet)
        try:
            self.config, self.backend_chosen = choose_env_backend(config)
            if self.config.env.note:
                logging.getLogger(__name__).info("%s", self.config.env.note)
            # the folder's owner from here on: nothing in it is read or cleaned before
            self.folder = RunFolder(self.run_dir, resume=bool(config.resume))
        except ValueError as error:  # FolderInUseError is a ConfigError already
            self._restore_console()
            raise error if isinstance(error, ConfigError) else ConfigError(str(error)) from error
        except BaseException:
            self._restore_console()
            raise
        try:
            self._build(self.config, self.folder.state)
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
        self._restore_console()

    def composed(self) -> dict[str, Any]:
        """The config as composed, its `${...}` as written, with the backend auto chose."""
        plain = copy.deepcopy(self._composed)
        if self.backend_chosen:
            plain["env"] = {**(plain.get("env") or {}), "backend": self.backend_chosen}
        return plain

    def _save_config(self) -> None:
        """Write what a later resume=<run dir> starts from: `composed()` (the backend auto
        chose kept where a resumed run's is)."""
        saved = saved_config_path(self.run_dir)
        if self.config.resume or self.backend_chosen or not saved.is_file():
            plain = {**self.composed(), "resume": None,
                     "trust_code": False}  # a later resume trusts code only when told again
            atomic.atomic_write_text(OmegaConf.to_yaml(plain), saved)

    def _build(self, config: RunConfig, state: RunState | None) -> None:
        """Build every part (under the folder's lock, held until the run ends); those built
        are closed again if a later one fails, else by ``_close``."""
        saved_seed = None if state is None else state.seed  # None: a format-1 state
        if saved_seed is not None and saved_seed != config.seed:  # edited in the saved config
            raise ConfigError(f"resume: seed={config.seed} but the run was started with "
                              f"seed={saved_seed} (its checkpoints/state.pt); a resumed run keeps "
                              f"it (its random state is saved). Fix: seed: {saved_seed} in "
                              f"{saved_config_path(self.run_dir)}, or start a new run.")
        if state is not None:
            _check_policy_kept(self.run_dir, config)
        if config.torch_threads is not None:  # small matmuls: threads only add overhead
            torch.set_num_threads(config.torch_threads)
        seed_everything(config.seed)
        self.summary: dict[str, Any] = {}  # what the loggers are closed with
        with ExitStack() as parts:
            # before the env: it picks MuJoCo's OpenGL backend, read as mujoco is imported
            self.videos = RunVideos.from_settings(config.logger, self.run_dir, config.env.id)
            parts.callback(self.videos.close)
            self.problem, self.algorithm = build_parts(config)
            if self.backend_chosen:  # said once the env is known to exist
                logging.getLogger(__name__).info(
                    "env %s runs on %s (env.backend=auto picked it; set env.backend=gymnasium "
                    "or envpool to choose)", config.env.id, self.backend_chosen)
            parts.callback(self.problem.close)
            if state is not None:  # before any env, metrics file or actor: e.g. a short center
                check_layout(state, self.algorithm, self.problem,
                             self.run_dir / CHECKPOINT_DIR / STATE_FILE)
            self.limits = StopLimits(config.generations, config.max_interactions,
                                     config.max_time, config.target_score,
                                     self.algorithm.objective_sense)
            if state is not None:
                _check_work_left(self.limits, state)
            self.distributed = distributed_mode(config, self.algorithm)
            try:  # every check before the evaluator: a bad config must not start ray actors
                self.loggers: LoggerGroup = make_loggers(
                    config.logger, self.run_dir, self.limits,
                    offsets=None if state is None else state.loggers)
                parts.callback(lambda: self.loggers.close(self.summary))
                # what the console shows and trackers record: the typed config, every key
                self.loggers.start(config.as_record())
            except (ImportError, ValueError) as error:  # a tracker, damaged metrics
                raise ConfigError(str(error)) from error
            self.evaluator: Evaluator = make_evaluator(config, self.problem)
            if self.evaluator is not self.problem:
                parts.callback(self.evaluator.close)  # e.g. ray actors
            self._close = parts.pop_all().close  # the run closes them when it ends


def _check_policy_kept(run_dir: Path, config: RunConfig) -> None:
    """ConfigError (one line) when a resumed run's env or network is not the one its
    checkpoints were saved with (their last.json): ``env.id`` or ``network.*`` edited in the
    saved config (a command line's change is refused as it is read, ``config/resume.py``).
    The backend may change; the env and the network may not."""
    saved = saved_policy_meta(run_dir)
    if saved is None:
        return
    env, saved_env = _env_name(config.env.id), _env_name(saved.get("env"))
    args = json.loads(json.dumps(config.network.network_args))  # as the .json holds them
    for key, value, kept, same in (
            ("env.id", config.env.id, saved_env, None in (env, saved_env) or env == saved_env),
            ("network.spec", config.network.spec, saved.get("architecture"),
             config.network.spec == saved.get("architecture")),
            ("network.network_args", config.network.network_args, saved.get("network_args"),
             args == (saved.get("network_args") or {}))):
        if not same:
            raise ConfigError(
                f"resume: {key}={value!r} but the run's checkpoints were saved with {kept!r} "
                f"(its checkpoints/last.json); a resumed run keeps its env and network (its "
                f"policy, observation statistics and metrics belong to them). Fix: {key} as it "
                f"was in {saved_config_path(run_dir)}, or start a new run.")


def _env_name(spec: Any) -> str | None:
    """The env name of a spec (``envpool::Hopper-v5``: ``Hopper-v5``); None for no spec
    (building the env says what is wrong with it)."""
    try:
        return parse_spec(str(spec))[1]
    except ValueError:
        return None


def _check_work_left(limits: StopLimits, state: RunState) -> None:
    """ConfigError (one line) for a resume whose stop rule its last generation met already:
    it would stop at once, its saved config rewritten to that rule."""
    done = {"generations": state.generation,
            "max_interactions": int(state.problem["interaction_count"])}
    for key, limit in (("generations", limits.generations),
                       ("max_interactions", limits.max_interactions)):
        if limit is not None and done[key] >= limit:
            raise ConfigError(
                f"resume: {key}={limit} but the run has done {done[key]:,} already, so it "
                f"would stop at once. Fix: {key}=<more than {done[key]}> to continue it (e.g. "
                f"{key}={2 * done[key]}).")
    # the last generation's figures, as the stop rules read them (none before generation 1)
    elapsed, center = state.status.get("elapsed_s"), state.status.get("center_eval")
    if limits.max_time is not None and elapsed is not None and elapsed >= limits.max_time:
        raise ConfigError(
            f"resume: max_time={limits.max_time} but the run has run for {elapsed:.1f} s "
            f"already, so it would stop at once. Fix: max_time=<more than {elapsed:.1f}> to "
            f"continue it (e.g. max_time={math.ceil(2 * elapsed)}), or max_time=null.")
    if reached(limits.sense, center, limits.target_score):
        raise ConfigError(
            f"resume: target_score={limits.target_score} but the run's last center_eval, "
            f"{center:.2f}, reached it already, so it would stop at once. Fix: "
            "target_score=null to continue it (or a target it has not reached).")
