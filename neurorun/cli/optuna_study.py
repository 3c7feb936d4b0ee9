"""An Optuna search's study, checked before its first trial: the direction and the storage
it is made with, and a stored study continued (its search space, and the seeds whose random
trials it holds, recorded with it as ``SEEDS_ATTR``)."""

from __future__ import annotations

import sys
from typing import Any

from omegaconf import DictConfig

from neurorun.common.errors import ConfigError, one_line

SEEDS_ATTR = "neurorun_sampler_seeds"  # a stored study's user attribute: the seeds that drew


def check_study(sweeper: DictConfig, spaces: dict[str, Any]) -> None:
    """The direction and storage Optuna makes its study with (both were tracebacks from inside
    Optuna or SQLAlchemy once the search started), and a stored study's search space against
    ``spaces`` (each searched key's distribution, or a fixed key's value).

    Raises:
        ConfigError: naming the setting and the fix.
    """
    direction = sweeper.get("direction")
    direction = getattr(direction, "name", direction)  # the plugin's default is an enum
    if direction not in ("maximize", "minimize"):  # one objective: no list of directions
        raise ConfigError(f"hydra.sweeper.direction={direction!r}; expected maximize or "
                          "minimize. Fix: hydra.sweeper.direction=maximize (neurorun's "
                          "objective is higher-is-better).")
    storage = sweeper.get("storage")
    if storage is None:
        return
    from optuna.storages import RDBStorage

    try:  # the sweeper opens it next; a database URL's tables are made here, as there
        opened = RDBStorage(str(storage))
    except Exception as error:  # SQLAlchemy's: no such dialect, no such folder, refused
        raise ConfigError(
            f"hydra.sweeper.storage={storage!r} cannot be opened ({one_line(error)}). Fix: a "
            "database URL Optuna takes (e.g. sqlite:///runs/optuna.db, its folder made "
            "first), or hydra.sweeper.storage=null to keep the study in memory.") from error
    try:
        _check_continued(opened, sweeper, spaces)
    finally:
        opened.engine.dispose()  # its connections closed again


def _check_continued(storage: Any, sweeper: DictConfig, spaces: dict[str, Any]) -> None:
    """Refuse a stored study's search continued with other choices for a key (Optuna's
    ValueError at the first trial, a traceback), and warn where it goes on with a seed that drew
    its random trials: in a new process the sampler's generator starts afresh, so its random
    trials (TPE's first n_startup_trials, every trial of RandomSampler) come again."""
    from optuna.trial import TrialState

    name = sweeper.get("study_name")
    if name is None:
        return
    try:
        study_id = storage.get_study_id_from_name(name)
    except KeyError:  # a new study
        return
    trials = storage.get_all_trials(study_id)
    for key, space in _searched(spaces).items():
        stored = next((t.distributions[key] for t in trials if key in t.distributions), None)
        if stored is not None and not _compatible(stored, space):
            raise ConfigError(
                f"study {name!r} (hydra.sweeper.storage) searched {key} over {stored}, and this "
                f"search gives {space}: Optuna keeps a key's choices within a study. Fix: the "
                f"study's choices for {key}, or another hydra.sweeper.study_name.")
    sampler = sweeper.get("sampler") or {}
    seed, startup = sampler.get("seed"), sampler.get("n_startup_trials")
    if seed is None or not ("RandomSampler" in str(sampler.get("_target_", ""))
                            or startup is not None):  # seeded afresh, or no random draws
        return
    seeds = storage.get_study_user_attrs(study_id).get(SEEDS_ATTR)  # None: not recorded
    done = sum(trial.state in (TrialState.COMPLETE, TrialState.PRUNED) for trial in trials)
    if done and (startup is None or done < startup) and (seeds is None or seed in seeds):
        unused = max([seed, *(seeds or [])]) + 1
        print(f"neurorun: warning: study {name!r} holds {done} finished trials, and "
              f"hydra.sweeper.sampler.seed={seed} "
              f"{'may draw' if seeds is None else 'draws'} the same random trials again. Fix: "
              f"another seed, e.g. hydra.sweeper.sampler.seed={unused}.", file=sys.stderr)


def _searched(spaces: dict[str, Any]) -> dict[str, Any]:
    """The distributions of ``spaces`` as a study stores them: the sweeper plugin still makes
    Optuna's deprecated classes (UniformDistribution), which ``Study.ask`` converts."""
    import warnings

    from optuna.distributions import (
        BaseDistribution,
        _convert_old_distribution_to_new_distribution,
    )

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # the deprecated classes' own notice
        return {key: _convert_old_distribution_to_new_distribution(space)
                for key, space in spaces.items() if isinstance(space, BaseDistribution)}


def _compatible(stored: Any, space: Any) -> bool:
    """Whether a study that searched a key over ``stored`` takes ``space`` for it (Optuna's own
    rule: the same kind, and a categorical's same choices; a range may change)."""
    from optuna.distributions import check_distribution_compatibility

    try:
        check_distribution_compatibility(stored, space)
    except ValueError:
        return False
    return True


def record_seed(sweeper: DictConfig) -> None:
    """Add the sampler's seed to the seeds a stored study records (SEEDS_ATTR), where the
    study exists: the next search that continues it is warned only for a seed that drew."""
    from optuna.storages import RDBStorage

    seed, name, url = ((sweeper.get("sampler") or {}).get("seed"), sweeper.get("study_name"),
                       sweeper.get("storage"))
    if seed is None or name is None or url is None:
        return
    storage = RDBStorage(str(url))
    try:
        study_id = storage.get_study_id_from_name(name)
        seeds = storage.get_study_user_attrs(study_id).get(SEEDS_ATTR) or []
        storage.set_study_user_attr(study_id, SEEDS_ATTR, sorted({*seeds, int(seed)}))
    except KeyError:  # not made yet (the search stopped before its first trial)
        pass
    finally:
        storage.engine.dispose()
