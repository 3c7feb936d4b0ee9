"""The checkpoint format: policy pickles, weights-only twins and the resume state.

    <run>/checkpoints/last.pkl   the reference's policy pickle (problem.save_solution)
    <run>/checkpoints/last.pt    weights only: loads with torch.load(weights_only=True)
    <run>/checkpoints/last.json  what the weights mean: env, architecture, sizes, obs stats
    <run>/checkpoints/best.*     the same for the best solution so far
    <run>/checkpoints/state.pt   everything `resume=<run>` needs to continue bit for bit

Each function gives files for `atomic.atomic_write_all` (a checkpoint is written as one unit)
or reads them; `tools/loading.py` rebuilds a policy from its `.pt` and `.json`. state.pt and
each `.json` say their format (record/format.py, which reads an older one).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from neurorun.common import jsonio
from neurorun.common.atomic import Write, text_file, torch_file
from neurorun.common.errors import one_line
from neurorun.common.files import read_bounded
from neurorun.common.values import is_exact_int
from neurorun.problems import RunningNorm
from neurorun.record.best import BestCenter
from neurorun.record.format import stamped, upgrade_state
from neurorun.record.layout import BEST_POLICY, CHECKPOINT_DIR, LAST_POLICY, STATE_FILE, policy_path
from neurorun.record.state import RunState, check_record


def _as_list(value: Any) -> Any:
    return value.tolist() if isinstance(value, torch.Tensor) else value


# A policy's .json: what its weights mean. The keys a policy is rebuilt from
# (tools/loading.py), with their types; policy_meta writes them, with the sizes.
META_TYPES = (("env", "a string", lambda v: isinstance(v, str)),
              ("architecture", "a string", lambda v: isinstance(v, str)),
              ("network_args", "a JSON object or null", lambda v: v is None or isinstance(v, dict)),
              ("env_config", "a JSON object or null", lambda v: v is None or isinstance(v, dict)),
              *((key, "a whole number >= 1", lambda v: is_exact_int(v) and v >= 1)
                for key in ("obs_length", "act_length")))


# the keys of a policy's .json that hold settings the env and the network are built with:
# written exactly, a non-finite float there included (jsonio.dumps)
SETTING_KEYS = ("env_config", "network_args")


def policy_meta(problem: Any, env_config: Any, network_args: Any) -> dict[str, Any]:
    """The .json of a run's policies (``META_TYPES`` and the sizes): the env with its backend
    (``envpool::Id``), its keyword arguments, the network and its arguments (plain values of
    the run's config)."""
    return {"env": problem.env_options.spec, "env_config": env_config,
            "architecture": problem.architecture, "network_args": network_args,
            "obs_length": problem.obs_length, "act_length": problem.act_length,
            "observation_normalization": problem.observation_normalization}


def policy_files(problem: Any, solution: torch.Tensor, stem: str | Path,
                 meta: Mapping[str, Any], obs_stats: Any = None) -> list[tuple[Path, Write]]:
    """The files of one policy, for atomic_write_all: `<stem>.pkl` (problem.save_solution),
    `<stem>.pt` and `<stem>.json`.

    Args:
        problem: the problem that evaluated `solution` (knows the env, network, obs stats).
        solution: (D,) parameter vector.
        stem: path without suffix, e.g. `<run>/checkpoints/best`.
        meta: what the weights mean (env, architecture, network_args, generation, score...).
        obs_stats: the observation statistics `solution` was evaluated with (a RunningNorm;
            default: the problem's current ones).
    """
    stem = Path(stem)
    solution = solution.detach().to("cpu").clone()
    norm = getattr(problem, "obs_stats", None) if obs_stats is None else obs_stats
    stats = {"obs_mean": None, "obs_stdev": None} if norm is None else norm.export()
    weights = {"solution": solution, **{k: v for k, v in stats.items() if v is not None}}
    described = stamped({**meta, "solution_length": int(solution.numel()),
                         **{k: _as_list(v) for k, v in stats.items()}})
    text = jsonio.dumps(described, exact=SETTING_KEYS, indent=2, default=str) + "\n"
    return [(stem.with_suffix(".pkl"), lambda tmp: problem.save_solution(solution, tmp, obs_stats)),
            (stem.with_suffix(".pt"), torch_file(weights)),
            (stem.with_suffix(".json"), text_file(text))]


def run_policy_files(problem: Any, run_dir: str | Path, meta: Mapping[str, Any], *,
                     center: torch.Tensor, generation: int, center_eval: float | None,
                     best: BestCenter) -> list[tuple[Path, Write]]:
    """The files of a run's two policies, for atomic_write_all (with the resume state: they
    belong to one generation): `last.*`, the center after ``generation`` (its center_eval, or
    None where it was not evaluated), and `best.*`, the best center so far with the statistics
    it was evaluated with (the center itself while no center_eval was finite).

    Args:
        meta: the run's ``policy_meta``.
    """
    last = policy_files(problem, center, policy_path(run_dir, LAST_POLICY),
                        {**meta, "generation": generation, "center_eval": center_eval})
    stats = None if best.obs_stats is None else RunningNorm.from_state_dict(best.obs_stats)
    kept = policy_files(problem, center if best.solution is None else best.solution,
                        policy_path(run_dir, BEST_POLICY),
                        {**meta, "generation": best.generation or generation,
                         "score": best.score}, stats)
    return [*last, *kept]


def state_file(state: RunState, run_dir: str | Path) -> tuple[Path, Write]:
    """The resume state's file `<run>/checkpoints/state.pt`, for atomic_write_all."""
    return Path(run_dir) / CHECKPOINT_DIR / STATE_FILE, torch_file(state.as_dict())


def load_state(run_dir: str | Path) -> RunState | None:
    """The resume state of `run_dir`, or None when it has none yet.

    Loaded with `torch.load(weights_only=True)`: tensors, numbers, strings, lists and dicts,
    never code, so a state.pt from a shared folder cannot run anything.

    Raises:
        ValueError: the file is truncated, not a torch file, holds other objects, a format
            this neurorun does not read (format.FormatError), or a record no run writes
            (state.check_record) (one line).
    """
    path = Path(run_dir) / CHECKPOINT_DIR / STATE_FILE
    if not path.is_file():
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # pickle, zip and torch all raise their own types
        raise ValueError(
            f"resume: {path} cannot be loaded as plain data "
            f"({one_line(error, with_type=True, first_line=True)}); it is truncated, corrupt or "
            "holds objects that could run code. "
            "Fix: resume from an intact copy of the run, or start a new run.") from error
    if not isinstance(state, dict) or "generation" not in state:
        raise ValueError(f"resume: {path} is not a neurorun resume state (no 'generation'). "
                         "Fix: resume from the run's own folder, or start a new run.")
    upgrade_state(state, path)  # an older format's record in today's
    check_record(state, path)  # plain data can still lie: a negative count, a zero stdev
    return RunState.from_saved(state)


def saved_policy_meta(run_dir: str | Path) -> dict[str, Any] | None:
    """The .json of the run's last checkpoint (``policy_meta``'s keys); None where that file
    is missing or is no policy's .json (the tools say why, when they read it)."""
    try:
        meta = json.loads(read_bounded(policy_path(run_dir, LAST_POLICY, ".json"), 2**20))
    except (OSError, ValueError, RecursionError):
        return None
    return meta if isinstance(meta, dict) else None
