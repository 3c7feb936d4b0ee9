"""The resume record's checks read what each part declares (record/state.py): the algorithm's
step sizes (``SearchAlgorithm.POSITIVE``) and its name in the registry."""

from __future__ import annotations

import pytest
import torch

from neurorun.algorithms import PGPE
from neurorun.common.errors import ConfigError
from neurorun.record.checkpoint import load_state
from tests.record.crafted import craft_state, set_key


def _craft(run, change):
    """Apply ``change`` to the algorithm's part of the run's state.pt."""
    return craft_state(run, lambda state: change(state["algorithm"]))


def _zero_first(algorithm):
    search = algorithm["search"]
    search["mu"] = search["mu"].clone()
    search["mu"][0] = 0.0


def test_the_step_sizes_held_above_0_are_the_algorithms_declaration(trained, monkeypatch):
    """A center with a 0 is a center; declared a step size, a 0 is refused."""
    path = _craft(trained, _zero_first)
    assert PGPE.POSITIVE == ("sigma",)  # the shared default: every algorithm's stdev is sigma
    load_state(trained)
    monkeypatch.setattr(PGPE, "POSITIVE", ("sigma", "mu"))
    with pytest.raises(ConfigError) as refused:
        load_state(trained)
    message = str(refused.value)
    assert str(path) in message and " algorithm.search.mu is " in message
    assert "values > 0" in message


@pytest.mark.parametrize("name", ["nope", 7])
def test_a_state_of_no_registered_algorithm_is_refused_when_read(trained, name):
    path = _craft(trained, lambda algorithm: algorithm.update(algorithm=name))
    with pytest.raises(ConfigError) as refused:
        load_state(trained)
    message = str(refused.value)
    assert "\n" not in message and str(path) in message
    assert " algorithm.algorithm is " in message and "'pgpe'" in message


# ----- the record is what its parts declare -------------------------------------------------

def _at(state, key):
    for part in filter(None, key.split(".")):
        state = state[part]
    return state


def test_each_part_saves_what_it_declares(trained):
    """The saved record's keys, part by part, are the TypedDicts the checks read (the parts
    saved from a dataclass's fields cannot differ from them; the GPU's generators are saved
    on a GPU only)."""
    from neurorun.common.seeding import GeneratorsRecord, NumpyRecord
    from neurorun.problems.evaluator import EvaluatorRecord
    from neurorun.problems.running_norm import NormRecord, RunningNorm
    from neurorun.record.restart import RestartRecord

    state = torch.load(trained / "checkpoints" / "state.pt", weights_only=True)
    for key, part in {"problem": EvaluatorRecord, "rng": GeneratorsRecord,
                      "rng.numpy": NumpyRecord, "restart": RestartRecord}.items():
        assert set(_at(state, key)) == set(part.__annotations__) - {"cuda"}, key
    assert set(RunningNorm(3).state_dict()) == set(NormRecord.__annotations__)
    # every algorithm's: tests/algorithms/test_registry.py


@pytest.mark.parametrize("key", [f"{prefix}.{name}".lstrip(".") for prefix, names in [
    ("", ["elapsed_s", "restart", "loggers"]), ("algorithm", ["draw", "pending", "search"]),
    ("problem", ["episode_count", "obs_stats", "noise_rng"]), ("rng", ["numpy", "torch"]),
    ("rng.numpy", ["keys", "pos"]), ("best", ["obs_stats", "score"]),
    ("status", ["restarts", "total_episode_count"]), ("restart", ["evaluations"]),
    ("restart.attempt", ["regime"])] for name in names])
def test_a_declared_key_missing_from_state_pt_is_named(trained, key):
    prefix, _, name = key.rpartition(".")
    path = craft_state(trained, lambda state: _at(state, prefix).pop(name))
    with pytest.raises(ConfigError) as refused:
        load_state(trained)
    message = str(refused.value)
    assert "\n" not in message and f"{path}: {key} is missing" in message


def test_an_attempt_with_a_key_more_is_refused_when_read(trained):
    """The attempt is rebuilt as AttemptRecord(**attempt): a key more would fail mid-resume."""
    path = craft_state(trained, set_key("restart/attempt/bogus", 1))
    with pytest.raises(ConfigError) as refused:
        load_state(trained)
    message = str(refused.value)
    assert f"{path}: restart.attempt is [" in message and "'bogus'" in message
    assert "expected the keys ['evaluations', 'generations', 'max_generations'" in message


@pytest.mark.parametrize("key", ["loggers.rows", "status.generation"])
def test_a_count_that_disagrees_with_the_generation_is_named_with_its_value(trained, key):
    """It read "generation is 2, expected 100 (its loggers.rows)", as if generation were the
    changed one: either may be."""
    generation = torch.load(trained / "checkpoints" / "state.pt", weights_only=True)["generation"]
    prefix, _, name = key.partition(".")
    path = craft_state(trained, lambda state: state[prefix].update({name: generation + 98}))
    with pytest.raises(ConfigError) as refused:
        load_state(trained)
    assert (f"{path}: generation is {generation}, expected the {generation + 98} of its {key} "
            "(they disagree);") in str(refused.value)
