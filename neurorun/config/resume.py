"""The config of a resumed run: the run folder's saved config with the command line's keys
on top, under the rules of what a resumed run may change (never its groups, seed, network or
env) and without running code or reading the environment the file names unless told
(``trust_code=true``). Its record in the run folder is cli/resume_record.py's."""

from __future__ import annotations

import difflib
from importlib import resources
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import ConfigAttributeError, ConfigKeyError

from neurorun.algorithms import algorithms_with
from neurorun.common.user_code import code_in_config, refuse_untrusted
from neurorun.common.values import shown
from neurorun.config.saved_yaml import env_reads, read_config, refuse_env_reads, without_env_reads
from neurorun.config.schema import ALGO_KEYS, OPEN_MAPPINGS, in_open_mapping
from neurorun.problems.running_norm import MIN_VARIANCE
from neurorun.record.layout import CHECKPOINT_DIR, STATE_FILE, resume_command, saved_config_path


def require_saved_config(run_dir: str | Path) -> Path:
    """The saved config of the run in `run_dir`; FileNotFoundError (one line) if none."""
    path = saved_config_path(run_dir)
    if not path.is_file() and (Path(run_dir) / "multirun.yaml").is_file():
        raise FileNotFoundError(
            f"resume={str(run_dir)!r} is a sweep's folder; each of its jobs is a run of its "
            "own. Fix: resume=<one job's folder in it> for each job to continue.")
    if not path.is_file():
        raise FileNotFoundError(
            f"resume={str(run_dir)!r}: no saved config at {path}; expected the folder of an "
            "earlier neurorun run (it holds .hydra/config.yaml). Fix: pass that folder.")
    return path


FIXED_ON_RESUME = {  # keys a resumed run cannot change, and why
    "seed": "its random state is saved",
    "network": "the checkpoint holds that network's parameters",
    "env.id": "its policy, observation statistics and metrics belong to that env",
    "algo.name": "its search state is that algorithm's",
    "algo.optimizer": "its search state holds that optimizer's",
    # CMA-ES's covariance: a (D, D) matrix, or the (D,) diagonal of sep-CMA-ES
    "algo.separable": "its search state holds a full (false) or a diagonal (true) covariance",
    "problem.observation_min_variance": "its policies were scored with that normalization",
    # what center_eval is: best.* and best_center_eval hold scores measured this way
    "env.env_config": "its center_eval and best policy were scored on the env made so",
    "problem.episode_length": "its center_eval and best policy were scored on episodes that "
                              "long",
    "eval_episodes": "its best center_eval is a mean over that many test episodes, which "
                     "neurorun-eval repeats",
}
_ABSENT = object()  # a key the saved config does not have
# fixed keys that configs saved before the key existed lack, at the value those runs had
FIXED_SINCE = {"problem.observation_min_variance": MIN_VARIANCE}
# where a search starts: read again by a restart only (restart.patience)
START_KEYS = ("algo.center_init", "algo.stdev_init", "algo.radius_init", "problem.initial_bounds")


def load_run_config(run_dir: str | Path, overrides: list[str]) -> DictConfig:
    """The saved config of `run_dir` with command-line `overrides` (key=value) on top.

    Raises:
        FileNotFoundError: `run_dir` has no saved config.
        ValueError: an override changes a config group (e.g. `algo=snes`) or misses a key;
            the file is no bounded YAML mapping, or reads the environment without trust_code.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser

    source = require_saved_config(run_dir)
    config = read_config(source)  # bounded: no aliases, UTF-8, a mapping
    parsed = OverridesParser.create().parse_overrides(overrides)
    opt_in = f"resume with trust_code=true: {resume_command(run_dir)} trust_code=true"
    reads = set(env_reads(config))  # a value given for one of these is taken as the run's own
    if not any(o.key_or_group == "trust_code" and o.value() is True for o in parsed):
        # nothing below may resolve the file's ${oc.env:...}: the keys given here replace them
        refuse_env_reads({key: value for key, value in env_reads(config).items()
                          if not any(_covers(o.key_or_group, key) for o in parsed)}, source, opt_in)
        config = without_env_reads(config)
    named = code_in_config(config)
    with open_dict(config):
        config.trust_code = False  # only the command line trusts code, never the file itself
    OmegaConf.set_struct(config, True)  # a misspelt key fails instead of adding a new one
    started = {key: _plain(OmegaConf.select(config, key, default=None)) for key in START_KEYS}
    groups = config_groups()
    for override in parsed:
        key = override.key_or_group
        named = {k: v for k, v in named.items() if not _covers(key, k)}  # given here: the user's
        if key == "resume" or key.startswith("hydra."):
            continue
        if override.is_delete():
            raise ValueError(f"resume: cannot delete {key!r} from a saved run's config. Fix: "
                             f"drop {override.input_line}, or give {key} a value.")
        node = OmegaConf.select(config, key, default=_ABSENT, throw_on_missing=False)
        fixed = next((why for prefix, why in FIXED_ON_RESUME.items()
                      if key == prefix or key.startswith(prefix + ".")), None)
        value = override.value()
        if node is _ABSENT:
            if key not in FIXED_SINCE and not in_open_mapping(key):
                fixed = None  # another algorithm's key: "no key", below
            node = FIXED_SINCE.get(key)  # an older run's value of a key added since
        if isinstance(node, DictConfig) and isinstance(value, dict):  # merged, as Hydra would
            value = _plain(OmegaConf.merge(node, value))
        if fixed and key not in reads and _plain(node) != value:
            raise ValueError(
                f"resume: {key}={shown(value)} but the run was started with "
                f"{key}={shown(_plain(node))}; a resumed run keeps it ({fixed}). Fix: drop "
                f"{override.input_line}, or start a new run in another folder.")
        if key in groups and node is None and value is None:
            continue  # debug=null, hparams_search=null: none picked, as in the run
        # an open mapping given whole is merged (or emptied by null), as in a new run
        whole = isinstance(node, DictConfig) and key not in OPEN_MAPPINGS
        if key in groups or (whole and not override.is_add()):
            single = f"{key}.<option>" if isinstance(node, DictConfig) else "algo.popsize"
            raise ValueError(
                f"resume: {override.input_line!r} picks a config group; a resumed run keeps its "
                f"groups. Fix: override single keys (e.g. {single}=...) or start a new run."
            )
        try:
            OmegaConf.update(config, key, override.value(), merge=True,
                             force_add=override.is_add() or override.is_force_add())
        except (ConfigAttributeError, ConfigKeyError) as error:
            raise ValueError(f"resume: {override.input_line!r}: the saved config has no key "
                             f"{key!r}. Fix: {_closest_key(config, key, override)}.") from error
    OmegaConf.set_struct(config, False)
    if (Path(run_dir) / CHECKPOINT_DIR / STATE_FILE).is_file():  # else it starts again
        _refuse_unread_start(config, started)
    if config.trust_code is not True:  # text such as `no` is truthy, and trusts nothing
        refuse_untrusted(named, source, opt_in)
    config.resume = str(run_dir)
    return config


def _plain(node: Any) -> Any:
    return OmegaConf.to_container(node) if OmegaConf.is_config(node) else node


def _refuse_unread_start(config: DictConfig, started: dict[str, Any]) -> None:
    """ValueError for a start setting changed on a resume that no restart will read: the run
    goes on from its saved search state, and the new value would do nothing."""
    if OmegaConf.select(config, "restart.patience", default=None) is not None:
        return
    for key, value in started.items():
        now = _plain(OmegaConf.select(config, key, default=None))
        if now != value:
            raise ValueError(
                f"resume: {key}={shown(now)} but the run started from {key}={shown(value)}; it "
                "goes on from its saved search state, and without restarts (restart.patience=null) "
                f"nothing reads {key} again. Fix: drop {key}=, or start a new run in another "
                "folder.")


def config_groups() -> set[str]:
    """The names of neurorun's config groups (the packaged conf/ folders: algo, env, ...)."""
    return {entry.name for entry in resources.files("neurorun.conf").iterdir()
            if entry.is_dir() and not entry.name.startswith("_")}


def _closest_key(config: DictConfig, key: str, override: Any) -> str:
    """The fix for a key the saved config lacks: leaving out another algorithm's option, its
    closest sibling there, else adding it (a key a later neurorun declares, missing from an
    older run's config; no `algo.` key that no algorithm has)."""
    section, _, name = key.rpartition(".")
    node = OmegaConf.select(config, section) if section else config
    siblings = [str(k) for k in node] if isinstance(node, DictConfig) else []
    options = section == "algo" and name not in ALGO_KEYS  # the algorithm's, not the run's
    owners = algorithms_with(name) if options else []
    own = str(OmegaConf.select(config, "algo.name", default=""))
    if owners and own not in owners:  # another algorithm's option: no sibling's name fits
        return (f"leave it out: it is an option of {', '.join('algo=' + o for o in owners)}, "
                f"and the run keeps its algo={own}")
    close = difflib.get_close_matches(name, siblings, n=1)
    if close:  # a misspelling
        value = override.input_line.partition("=")[2]
        return f"{section + '.' if section else ''}{close[0]}={value}"
    if options and not owners:
        return "check the spelling: no algorithm has that option"
    return f"check the spelling, or add it with +{override.input_line}"


def _covers(override_key: str, key: str) -> bool:
    """Whether setting ``override_key`` sets ``key`` (itself, a parent or a child of it)."""
    return override_key == key or key.startswith(override_key + ".") or \
        override_key.startswith(key + ".")
