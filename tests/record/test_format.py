"""The saved format's version (record/format.py): state.pt and each policy .json say it, a file
of format 1 (saved before the version existed) is read into today's record, and a newer or
malformed format is refused with one line."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pytest
import torch

from neurorun.common.errors import ConfigError
from neurorun.record.checkpoint import load_state, state_file
from neurorun.record.format import FORMAT, FormatError, upgrade_state
from tests.record.crafted import craft_state, set_key

QUIET = "logger.console.quiet=true"


def state_path(run):
    return run / "checkpoints" / "state.pt"


def same(saved: Any, expected: Any) -> bool:
    """Equal records: the same keys, values and tensors (bit for bit)."""
    if isinstance(expected, torch.Tensor):
        return isinstance(saved, torch.Tensor) and torch.equal(saved, expected)
    if isinstance(expected, Mapping):
        return isinstance(saved, Mapping) and set(saved) == set(expected) and all(
            same(saved[key], value) for key, value in expected.items())
    if isinstance(expected, list | tuple):
        return isinstance(saved, list | tuple) and len(saved) == len(expected) and all(
            same(a, b) for a, b in zip(saved, expected, strict=True))
    return type(saved) is type(expected) and saved == expected


def test_format_4_is_todays():
    assert FORMAT == 4


def test_the_step_from_format_1_fills_what_format_1_files_lack():
    """A format-1 record (no "format") as runs saved before each key existed wrote it."""
    older = {"generation": 5, "algorithm": {"algorithm": "pgpe", "search": {
                 "mu": "MU", "sigma": "SIGMA",
                 "optimizer": {"lr": 0.1, "max_speed": 0.2, "momentum": 0.9, "velocity": "V"}}},
             "best": {"solution": None, "score": None, "generation": 0},
             "status": {"generation": 5, "popsize": 10}}
    expected = {"format": 4, "generation": 5, "algorithm": {"algorithm": "pgpe", "draw": 0,
                "search": {"mu": "MU", "sigma": "SIGMA", "optimizer": {
                    "lr": 0.1, "max_speed": 0.2, "momentum": 0.9, "velocity": "V", "steps": 0}}},
                "best": {"solution": None, "score": None, "generation": 0, "obs_stats": None},
                "status": {"generation": 5, "popsize": 10, "restarts": 0,
                           "center_eval_length": None},
                "seed": None, "restarts": 0, "restart": None, "restart_due": False,
                "stall_history": []}
    assert upgrade_state(older, "state.pt") == expected


def test_the_step_from_format_1_keeps_what_a_file_has_and_fills_no_other_optimizer():
    """Keys a format-1 file already holds stay; an optimizer without ClipUp's max_speed (SGD
    here) gets no step count; an empty status (before generation 1) stays empty."""
    older = {"generation": 0, "seed": 7, "restarts": 1, "stall_history": [1.5],
             "algorithm": {"draw": 11, "search": {"optimizer": {"lr": 0.1, "momentum": 0.9,
                                                                "velocity": "V"}}},
             "best": {"obs_stats": {"size": 3}}, "status": {}}
    expected = {"format": 4, "generation": 0, "seed": 7, "restarts": 1, "stall_history": [1.5],
                "algorithm": {"draw": 11, "search": {"optimizer": {"lr": 0.1, "momentum": 0.9,
                                                                   "velocity": "V"}}},
                "best": {"obs_stats": {"size": 3}}, "status": {}, "restart": None,
                "restart_due": False}
    assert upgrade_state(older, "state.pt") == expected


def test_a_format_1_state_resumes_and_reads_as_its_upgraded_record(trained):
    """A state.pt as a neurorun before the format's version wrote it: no format, seed, restart
    keys, noise draw, ClipUp step count nor best.obs_stats. It reads as the record the step
    from format 1 makes, and the run goes on."""
    from neurorun.config.resume import load_run_config
    from neurorun.loop.runner import run

    saved = torch.load(state_path(trained), weights_only=True)
    assert saved["format"] == 4
    older = copy.deepcopy(saved)
    for key in ("format", "seed", "restarts", "restart", "restart_due", "stall_history"):
        del older[key]
    del older["status"]["restarts"], older["algorithm"]["draw"], older["best"]["obs_stats"]
    del older["status"]["center_eval_length"]
    del older["algorithm"]["search"]["optimizer"]["steps"]
    torch.save(older, state_path(trained))
    expected = copy.deepcopy(saved)
    expected.update(seed=None, restarts=0, restart=None, restart_due=False, stall_history=[])
    expected["status"]["restarts"] = 0
    expected["status"]["center_eval_length"] = None  # not known to format 1 or 2
    expected["algorithm"]["draw"] = 0
    expected["algorithm"]["search"]["optimizer"]["steps"] = 0
    expected["best"]["obs_stats"] = None  # the debug run normalizes no observations
    assert same(load_state(trained).as_dict(), expected)
    result = run(load_run_config(trained, ["generations=3", QUIET]), run_dir=trained)
    assert result["generation"] == 3
    resumed = torch.load(state_path(trained), weights_only=True)
    assert resumed["format"] == 4
    # ClipUp counts its steps from 0 on (with no decay, a count changes no step)
    assert resumed["algorithm"]["search"]["optimizer"]["steps"] == 3 - 2  # 2: debug's


def test_the_step_from_format_2_fills_the_center_eval_length_of_the_last_status():
    older = {"format": 2, "generation": 4, "status": {"generation": 4, "center_eval": 9.5}}
    assert upgrade_state(older, "state.pt") == {
        "format": 4, "generation": 4,
        "status": {"generation": 4, "center_eval": 9.5, "center_eval_length": None}}
    assert upgrade_state({"format": 2, "status": {}}, "state.pt") == {"format": 4, "status": {}}


def test_the_step_from_format_3_changes_no_state():
    """Format 4 added the variance floor to the policy files; state.pt held it already."""
    older = {"format": 3, "generation": 2, "problem": {"obs_stats": {"min_variance": 0.01}}}
    assert upgrade_state(copy.deepcopy(older), "state.pt") == {**older, "format": 4}


def test_a_format_3_state_round_trips(trained, tmp_path):
    """Read as saved, and written again as read."""
    from neurorun.common.atomic import atomic_write_all

    saved = torch.load(state_path(trained), weights_only=True)
    record = load_state(trained)
    assert same(record.as_dict(), saved)
    atomic_write_all([state_file(record, tmp_path)])
    assert same(torch.load(state_path(tmp_path), weights_only=True), saved)


def test_a_state_of_a_newer_format_is_one_line_naming_the_fix(trained):
    from neurorun.config.resume import load_run_config
    from neurorun.loop.runner import run

    craft_state(trained, set_key("format", 5))
    metrics = (trained / "metrics.csv").read_bytes()
    with pytest.raises(ConfigError) as refused:  # exit 2 from the command
        run(load_run_config(trained, ["generations=3", QUIET]), run_dir=trained)
    message = str(refused.value)
    assert isinstance(refused.value, FormatError) and "\n" not in message
    for words in (str(state_path(trained)), "format 5", "formats up to 4", "upgrade neurorun"):
        assert words in message
    assert (trained / "metrics.csv").read_bytes() == metrics


@pytest.mark.parametrize("value", [0, -1, True, 4.0, "4", None])
def test_a_state_whose_format_is_not_a_whole_number_from_1_is_one_line(trained, value):
    craft_state(trained, set_key("format", value))
    with pytest.raises(FormatError) as refused:
        load_state(trained)
    message = str(refused.value)
    assert "\n" not in message and str(state_path(trained)) in message
    assert f"format is {value!r}" in message and "this neurorun's is 4" in message
