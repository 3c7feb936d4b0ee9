"""Load a saved policy from a run folder, a policy pickle or a weights-only `.pt` (+ `.json`).

A `.pt` holds only tensors (`torch.load(weights_only=True)`); the network is rebuilt from the
`.json` beside it, and a run folder is always read through them. A `.pkl` is the problem's
`save_solution` dict; unpickling it can run arbitrary code, so it is loaded only when the user
says so (`trust_pickle`, `--trust-pickle`), and then checked opcode by opcode first (a
truncated or corrupt file fails without running anything).
"""

from __future__ import annotations

import json
import pickle
import pickletools
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from neurorun.common.errors import one_line
from neurorun.common.saved_values import SavedValueError, check_vector
from neurorun.common.user_code import UntrustedCodeError, names_code, refuse_untrusted
from neurorun.envs import env_spaces
from neurorun.envs.base import UnknownEnvError
from neurorun.envs.gym_env import MujocoGLError
from neurorun.nets import NetworkParseError, NetworkSizeError
from neurorun.nets.network_spec import NetworkFactoryError, NetworkImportError
from neurorun.problems import make_problem
from neurorun.problems.running_norm import RunningNorm
from neurorun.record.checkpoint import META_TYPES
from neurorun.record.format import FormatError, format_of
from neurorun.record.layout import BEST_POLICY, CHECKPOINT_DIR, LAST_POLICY
from neurorun.record.record_check import described_value
from neurorun.tools.common import ToolError, is_input, open_input
from neurorun.tools.runs import run_settings
from neurorun.tools.video import users_gl_error

if TYPE_CHECKING:
    from neurorun.problems import Problem


@dataclass
class LoadedPolicy:
    """A saved policy: its parameters, how to rebuild the problem that ran it, and the policy
    module on raw observations (renders play it)."""

    policy: Any  # nn.Module with act(obs) -> env action, forward(obs) -> clipped outputs
    env: str  # env spec: "Id", "gym::Id", "brax::name" or "pkg.module:factory"
    source: Path
    solution: torch.Tensor  # (D,) the parameter vector
    architecture: str  # the network string (or pkg.module:Factory)
    network_args: dict[str, Any] = field(default_factory=dict)
    obs_stats: RunningNorm | None = None  # the run's observation statistics, when it had any
    env_config: dict[str, Any] = field(default_factory=dict)
    episode_length: int | None = None  # the run's training limit, when known

    def make_problem(self, episode_length: int | None) -> Problem:
        """The problem the run evaluated its center with: same env, network and observation
        statistics; episodes cut at ``episode_length``."""
        try:
            problem = make_problem(self.env, self.architecture,
                                   network_args=self.network_args or None,
                                   env_config=self.env_config, episode_length=episode_length,
                                   observation_normalization=self.obs_stats is not None)
        except (NetworkParseError, NetworkFactoryError, NetworkImportError) as error:  # the network
            where = (f"'architecture' of {self.source.with_suffix('.json').name}"
                     if self.source.suffix == ".pt" else "the pickle's 'architecture'")
            raise ToolError(f"{str(self.source)!r}: its network {self.architecture!r} ({where}) "
                            f"cannot be built: {one_line(error, with_type=True)}. Fix: restore "
                            "the architecture the run wrote") from error
        except NetworkSizeError as error:  # the network does not fit the env
            raise ToolError(f"{str(self.source)!r}: its network {self.architecture!r} does not "
                            f"fit {self.env!r}: {error.what}. Fix: restore the architecture the "
                            "run wrote (the network is rebuilt from it)") from error
        except Exception as error:
            raise _env_error(self, error) from error
        if problem.solution_length != self.solution.numel():
            problem.close()
            raise ToolError(f"{str(self.source)!r}: {self.solution.numel()} weights, but the "
                            f"network {self.architecture!r} on {self.env!r} has "
                            f"{problem.solution_length}; pass the env it was trained on")
        if self.obs_stats is not None:
            if self.obs_stats.size != problem.obs_length:
                problem.close()
                raise ToolError(f"{str(self.source)!r}: observation statistics of "
                                f"{self.obs_stats.size} values, but {self.env!r} observes "
                                f"{problem.obs_length}; the file was changed or is not a "
                                "run's. Fix: use an intact copy of the checkpoint the run wrote")
            problem.set_obs_stats(self.obs_stats)
        return problem


def load_policy(path: str | Path, *, checkpoint: str | None = None, env: str | None = None,
                trust_pickle: bool = False, trust_code: bool = False) -> LoadedPolicy:
    """Load `path`: a run folder (its `checkpoints/<checkpoint>.pt` + `.json`, best unless
    `checkpoint` says; its `.pkl` only with `trust_pickle`), a weights-only `.pt`, or (with
    `trust_pickle`) a policy pickle.
    `env` replaces the env the checkpoint names. A network or env factory (`pkg.mod:Name`)
    named in the `.json` is imported only with `trust_code` (a pickle trusted with
    `trust_pickle` runs its own code anyway).

    Raises:
        ToolError: missing or unreadable file, a `checkpoint` for a file, a pickle without
            `trust_pickle`, code named in the `.json` without `trust_code`, or an env that
            cannot be made here.
    """
    path = Path(path)
    if not path.exists():
        raise ToolError(f"{str(path)!r} does not exist; expected a run folder, a policy .pkl "
                        "or a weights-only .pt")
    if path.is_dir():
        path = _checkpoint_in(path, checkpoint or BEST_POLICY, trust_pickle)
    elif checkpoint is not None:
        raise ToolError(f"--checkpoint {checkpoint} picks a checkpoint of a run folder, and "
                        f"{str(path)!r} is a file: pass the run folder, or leave --checkpoint "
                        "out")
    if path.suffix == ".pkl":
        if not trust_pickle:
            weights = path.with_suffix(".pt")
            beside = (f"Use the weights-only {weights.name} (+ .json) beside it"
                      if is_input(weights) and is_input(weights.with_suffix(".json"))
                      else "No weights-only .pt + .json is beside it (a run folder's "
                           "checkpoints/ holds them)")
            raise ToolError(f"{str(path)!r} is a pickle, and loading a pickle runs any code it "
                            f"holds: not loaded. {beside}, or pass --trust-pickle if you trust "
                            "where the file came from")
        loaded = _load_pickle(path, env)
    elif path.suffix == ".pt":
        loaded = _load_weights(path, env, trust_code)
    else:
        raise ToolError(f"{str(path)!r}: expected a run folder, a policy .pkl or a .pt file")
    return loaded


def _checkpoint_in(folder: Path, checkpoint: str, trust_pickle: bool) -> Path:
    checkpoints = folder / CHECKPOINT_DIR
    base = checkpoints if checkpoints.is_dir() else folder
    weights, pickled = base / f"{checkpoint}.pt", base / f"{checkpoint}.pkl"
    if is_input(weights) and is_input(weights.with_suffix(".json")):
        return weights
    if is_input(pickled):
        if trust_pickle:
            return pickled
        missing = (f"{checkpoint}.json beside its {checkpoint}.pt" if is_input(weights)
                   else f"{checkpoint}.pt + {checkpoint}.json")
        raise ToolError(f"{str(folder)!r} has no {missing} (what the network is rebuilt "
                        f"from), and its {checkpoint}.pkl is a pickle, which runs any code it "
                        "holds: not loaded. Fix: restore the .json from a copy of the run, or "
                        "pass --trust-pickle if you trust where the folder came from")
    other = next((stem for stem in (BEST_POLICY, LAST_POLICY) if stem != checkpoint and
                  is_input(base / f"{stem}.pt")), None)
    fix = (f"pass --checkpoint {other} (the folder holds {other}.pt)" if other else
           "pass a run folder (a sweep holds one run per subfolder) or a checkpoint file")
    raise ToolError(f"no checkpoint in {str(folder)!r}: expected {CHECKPOINT_DIR}/"
                    f"{checkpoint}.pt (+ .json) or {checkpoint}.pkl; {fix}")


def _read_meta(path: Path) -> dict[str, Any]:
    json_path = path.with_suffix(".json")
    if not is_input(json_path):
        return {}
    try:
        with open_input(json_path) as file:
            meta = json.loads(file.read().decode("utf-8"))
    except (OSError, ValueError, RecursionError) as error:  # nested beyond Python's stack
        raise ToolError(f"{str(json_path)!r} is not valid JSON "
                        f"({one_line(error, first_line=True)}); it describes the checkpoint's env "
                        "and network") from error
    if not isinstance(meta, dict):
        raise ToolError(f"{str(json_path)!r}: expected a JSON object, got {type(meta).__name__}")
    try:
        format_of(meta, json_path)  # a later neurorun's policy: its keys may mean other things
    except FormatError as error:
        raise ToolError(str(error)) from None
    for key, kind, fits in META_TYPES:
        if key in meta and not fits(meta[key]):
            raise ToolError(f"{str(json_path)!r}: {key}={meta[key]!r}; expected {kind}. Fix: "
                            f"restore the {key} the run wrote (or pass a checkpoint whose "
                            ".json is intact)")
    return meta


def _load_pickle(path: Path, env: str | None) -> LoadedPolicy:
    with open_input(path) as file:
        data = file.read()
    try:
        for _ in pickletools.genops(data):  # reads opcodes only: nothing is executed
            pass
    except Exception as error:
        raise ToolError(f"{str(path)!r} is truncated or not a pickle ({error}); write it again "
                        "or use the weights-only .pt") from error
    try:
        saved = pickle.loads(data)
    except Exception as error:
        raise ToolError(f"cannot unpickle {str(path)!r}: {one_line(error, with_type=True)}; "
                        "it needs the code that saved it (neurorun installed)") from error
    if not isinstance(saved, dict) or not callable(getattr(saved.get("policy"), "act", None)):
        raise ToolError(f"{str(path)!r} is not a neurorun policy pickle: expected a dict whose "
                        "'policy' has an act(obs) method")
    meta = _read_meta(path)
    saved["policy"].eval()
    # the pickle has the reference's keys, without the count and the floor: the .json has them
    return _loaded(path, saved["policy"], env or str(saved.get("env")),
                   {**saved, **{key: meta[key] for key in ("obs_count", "obs_min_variance")
                                if key in meta}}, meta,
                   str(saved.get("architecture")))


def _is_torchscript(file: Any) -> bool:
    """Whether the open file is a TorchScript archive (a zip holding ``code/``), rewound."""
    import zipfile

    try:
        with zipfile.ZipFile(file) as archive:
            return any("/code/" in name for name in archive.namelist())
    except (zipfile.BadZipFile, OSError, ValueError):
        return False
    finally:
        file.seek(0)


def _load_weights(path: Path, env: str | None, trust_code: bool) -> LoadedPolicy:
    with open_input(path) as file:
        if _is_torchscript(file):
            raise ToolError(
                f"{str(path)!r} is an exported TorchScript policy (neurorun-export), not a "
                "run's checkpoint: play it with torch.jit.load(path)(obs) (its metadata: the "
                "'neurorun.json' extra file; docs/checkpoints.md, 'Exporting'), or give the "
                "tools the run folder it was exported from")
        try:
            weights = torch.load(file, map_location="cpu", weights_only=True)
        except Exception as error:
            if "zip archive" in str(error):  # torch's "internal miniz error", cut short
                raise ToolError(f"{str(path)!r} is not a whole checkpoint (cut short or "
                                "corrupt: not the zip archive torch.save writes). Fix: restore "
                                "it from a copy of the run") from error
            raise ToolError(f"cannot load {str(path)!r} with torch.load(weights_only=True): "
                            f"{one_line(error, with_type=True, first_line=True)}") from error
    meta = _read_meta(path)
    if not isinstance(weights, dict) or "solution" not in weights:
        raise ToolError(f"{str(path)!r} holds no 'solution' tensor; expected a neurorun "
                        "weights-only checkpoint")
    if "architecture" not in meta or "env" not in meta:
        raise ToolError(f"{str(path)!r} needs {path.with_suffix('.json').name} beside it "
                        "with 'env' and 'architecture' to rebuild the network")
    if not trust_code:
        _refuse_code(meta, path.with_suffix(".json"), env_given=env is not None)
    loaded = _loaded(path, None, env or str(meta["env"]), weights, meta,
                     str(meta["architecture"]))
    problem = loaded.make_problem(loaded.episode_length)
    try:
        loaded.policy = problem.to_policy(loaded.solution).eval()
    finally:
        problem.close()
    return loaded


def _loaded(path: Path, policy: Any, env: str, exported: dict[str, Any], meta: dict[str, Any],
            architecture: str) -> LoadedPolicy:
    """The policy file ``path`` holding ``exported`` (its solution and observation statistics,
    which follow the rules state.pt's do), with its run's settings (else its .json's)."""
    fix = ("the file was changed or is not a run's. Fix: use an intact copy of the checkpoint "
           "the run wrote")
    normalized = any(exported.get(key) is not None for key in ("obs_mean", "obs_sum"))
    if meta.get("observation_normalization", normalized) != normalized:  # as the run says
        raise ToolError(f"{str(path)!r} holds {'' if normalized else 'no '}observation "
                        f"statistics, but {path.with_suffix('.json').name} says "
                        f"observation_normalization={meta['observation_normalization']!r}; {fix}")
    try:
        check_vector("solution", exported.get("solution"))
        stats = RunningNorm.from_export(exported) if normalized else None
    except SavedValueError as error:
        raise ToolError(f"{str(path)!r}: {error.key} is {described_value(error.value)}, expected "
                        f"{error.expected}; {fix}") from None
    settings = run_settings(path)
    loaded = LoadedPolicy(
        policy, env, path, exported["solution"].float(), architecture,
        dict(meta.get("network_args") or {}), stats,
        dict(settings.get("env.env_config", meta.get("env_config")) or {}),
        settings.get("problem.episode_length"))
    _check_env(loaded, meta)
    return loaded


def _refuse_code(meta: dict[str, Any], source: Path, *, env_given: bool) -> None:
    """ToolError when the `.json` names a network or env factory to import (--env replaces
    its env: given on the command line, it is the user's)."""
    named = {"architecture": meta["architecture"]} if names_code(meta["architecture"],
                                                                  "network") else {}
    if not env_given and names_code(meta["env"], "env"):
        named["env"] = meta["env"]
    try:
        refuse_untrusted(named, source, "pass --trust-code")
    except UntrustedCodeError as error:
        raise ToolError(str(error)) from None


def _env_error(loaded: LoadedPolicy, error: Exception) -> ToolError:
    # the environment's MUJOCO_GL did not load: gymnasium's envs say so (MujocoGLError), brax's
    # and Playground's import of mujoco raises its own error naming it
    cause = error.__cause__ if isinstance(error, MujocoGLError) else error
    failed = (f"{str(loaded.source)!r}: its env {loaded.env!r} cannot be made here "
              f"({one_line(cause or error, with_type=True)})")
    if isinstance(error, MujocoGLError) or "MUJOCO_GL" in str(error):
        return users_gl_error(failed) or ToolError(failed)
    if isinstance(error, UnknownEnvError):  # a name no backend has: nothing to install
        fix = "" if "Fix:" in str(error) else ". Fix: a name it lists"
        return ToolError(f"{failed}{fix} (or --env ID)")
    return ToolError(f"{failed}; install what provides it (e.g. pip install 'gymnasium[mujoco]' "
                     "or brax) or pass --env ID")


def _check_env(loaded: LoadedPolicy, meta: dict[str, Any]) -> None:
    """The env can be made here, and its observation and action sizes are the ones the policy
    was trained with (another env, --env, can have as many weights and other sizes)."""
    try:
        obs_space, act_space, _ = env_spaces(loaded.env, **loaded.env_config)
    except Exception as error:
        raise _env_error(loaded, error) from error
    sizes = (int(np.prod(obs_space.shape)), int(np.prod(act_space.shape)))
    trained = (meta.get("obs_length"), meta.get("act_length"))
    if None not in trained and tuple(int(n) for n in trained) != sizes:
        raise ToolError(f"{str(loaded.source)!r} was trained on {meta.get('env')!r} with "
                        f"{trained[0]} observations and {trained[1]} actions, but "
                        f"{loaded.env!r} has {sizes[0]} and {sizes[1]}; pass an env of the "
                        "same sizes with --env (or none: the run's own)")
