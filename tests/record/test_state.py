"""The resume record's checks read what each part declares (record/state.py): the algorithm's
step sizes (``SearchAlgorithm.POSITIVE``) and its name in the registry."""

from __future__ import annotations

import pytest
import torch

from neurorun.algorithms import PGPE
from neurorun.common.errors import ConfigError
from neurorun.record.checkpoint import load_state


def _craft(run, change):
    path = run / "checkpoints" / "state.pt"
    state = torch.load(path, weights_only=True)
    change(state["algorithm"])
    torch.save(state, path)
    return path


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
