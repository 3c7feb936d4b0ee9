"""Crafted or corrupt policy files and run configs: one line and exit
status 2 before any episode runs. A policy file's solution and observation statistics are
held to the rules state.pt's are (a tensor of the wrong kind was a traceback, a NaN solution
or a count of 0 was evaluated), and a run's config that the tools refuse is refused by eval
too, as by neurorun-compare (eval fell back to 10 episodes from seed 0 without a word)."""

from __future__ import annotations

import json
import math
import pickle

import pytest
import torch

from .helpers import PLOT_TOOL, TOOLS, fails_with, save_checkpoint

NEGATIVE_VARIANCE = "values >= obs_sum**2 / obs_count (a variance >= 0)"
CRAFTED = [  # (key, new value or a function of the saved one, what the refusal expects)
    ("solution", "abc", "a floating tensor of shape (n,)"),
    ("solution", lambda solution: solution * math.nan, "finite values"),
    ("solution", lambda solution: solution + math.inf, "finite values"),
    ("solution", lambda solution: solution.reshape(2, -1), "a floating tensor of shape (n,)"),
    ("solution", lambda solution: solution.long(), "a floating tensor of shape (n,)"),
    ("obs_count", "abc", "a whole number >= 0"),
    ("obs_count", math.nan, "a whole number >= 0"),
    ("obs_count", 49.5, "a whole number >= 0"),  # observations are counted one by one
    ("obs_count", 0.0, "> 0 where the sums are not 0"),
    ("obs_sum", lambda total: total.reshape(1, -1), "a floating tensor of shape (n,)"),
    ("obs_sum_of_squares", lambda squares: -squares, NEGATIVE_VARIANCE),
    # sums no observations give: a variance below 0, which the stdev's floor hid
    ("obs_sum_of_squares", lambda squares: squares * 0, NEGATIVE_VARIANCE),
]


def _craft(path, key, change) -> None:
    """Set ``key`` of the policy file ``path`` (a .pt or a .pkl)."""
    if path.suffix == ".pt":
        saved = torch.load(path, weights_only=True)
    else:
        saved = pickle.loads(path.read_bytes())
    saved[key] = change(saved[key]) if callable(change) else change
    if path.suffix == ".pt":
        torch.save(saved, path)
    else:
        path.write_bytes(pickle.dumps(saved))


@pytest.mark.parametrize(("key", "change", "expected"), CRAFTED,
                         ids=[f"{key}-{i}" for i, (key, *_) in enumerate(CRAFTED)])
def test_a_crafted_policy_file_is_one_line(tmp_path, capsys, key, change, expected):
    run = save_checkpoint(tmp_path / "run", normalize=True)
    path = run / "checkpoints" / "best.pt"
    _craft(path, key, change)
    fails_with(capsys, "eval", [str(run), "--episodes", "1"], repr(str(path)),
               f": {key} is ", f"expected {expected}")


@pytest.mark.parametrize("tool", ["eval", "render"])
def test_a_crafted_pickle_is_held_to_the_same_rules(tmp_path, capsys, tool):
    run = save_checkpoint(tmp_path / "run", normalize=True)
    path = run / "checkpoints" / "best.pkl"
    _craft(path, "solution", lambda solution: solution * math.nan)
    out = ["--out", str(tmp_path / "v.gif")] if tool == "render" else []
    fails_with(capsys, tool, [str(path), "--trust-pickle", *out], ": solution is ",
               "finite values")


def test_statistics_the_file_lacks_are_named(tmp_path, capsys):
    """Without obs_count a policy's statistics come from obs_mean and obs_stdev (a pickle's
    way): without obs_mean too, a KeyError traceback; without all five, the policy ran with no
    normalization although its .json says the run had one."""
    run = save_checkpoint(tmp_path / "run", normalize=True)
    path = run / "checkpoints" / "best.pt"
    saved = torch.load(path, weights_only=True)
    torch.save({key: value for key, value in saved.items()
                if key not in ("obs_mean", "obs_count")}, path)
    fails_with(capsys, "eval", [str(run), "--episodes", "1"], ": obs_mean is None, expected")
    torch.save({"solution": saved["solution"]}, path)
    meta = json.loads(path.with_suffix(".json").read_text())
    path.with_suffix(".json").write_text(json.dumps({**meta, "observation_normalization": True}))
    fails_with(capsys, "eval", [str(run), "--episodes", "1"], "holds no observation statistics",
               "best.json says observation_normalization=True")


def test_statistics_of_another_length_than_the_envs_observations(tmp_path, capsys):
    run = save_checkpoint(tmp_path / "run", normalize=True)
    path = run / "checkpoints" / "best.pt"
    for key in ("obs_sum", "obs_sum_of_squares"):
        _craft(path, key, lambda value: value[:2].clone())
    fails_with(capsys, "eval", [str(run), "--episodes", "1"],
               "observation statistics of 2 values", "'CartPole-v1' observes 4")


def test_a_json_nested_past_pythons_stack_is_one_line(run_dir, capsys):
    path = run_dir / "checkpoints" / "best.json"
    path.write_text("[" * 100_000 + "]" * 100_000)  # RecursionError in json.loads
    fails_with(capsys, "eval", [str(run_dir), "--episodes", "1"], repr(str(path)),
               "is not valid JSON")


CONFIGS = {  # a saved config that the tools refuse, and a word of the refusal
    "alias": ("env: {id: CartPole-v1}\na: &x [1, 2]\nb: *x\n", "alias"),
    "depth": ("env: {id: CartPole-v1}\na: " + "[" * 70 + "]" * 70 + "\n", "nests deeper"),
    "size": ("env: {id: CartPole-v1}\na: '" + "x" * (4 << 20) + "'\n", "larger than"),
    "tag": ("env: {id: CartPole-v1}\na: !!python/name:os.system x\n", "is not a config"),
    "env_config": ("env: {id: CartPole-v1, env_config: [1]}\n",
                   "env.env_config=[1]; expected a mapping"),
    "eval_episodes": ("env: {id: CartPole-v1}\neval_episodes: abc\n",
                      "eval_episodes='abc'; expected an integer >= 1 or null"),
    # the tools leave an environment read unread: the env ran without it, or with "???"
    "env_read": ("env: {id: CartPole-v1, env_config: {a: '${oc.env:HOME}'}}\n",
                 "env.env_config cannot be read (Missing mandatory value: a; the tools read no"),
    "episodes_read": ("env: {id: CartPole-v1}\neval_episodes: '${oc.env:HOME}'\n",
                      "eval_episodes cannot be read"),
}


@pytest.mark.parametrize("case", CONFIGS)
def test_eval_refuses_a_run_config_the_tools_refuse(run_dir, capsys, case):
    text, said = CONFIGS[case]
    saved = run_dir / ".hydra" / "config.yaml"
    saved.parent.mkdir()
    saved.write_text(text)
    fails_with(capsys, "eval", [str(run_dir)], str(saved), said)


def test_a_run_config_with_the_settings_eval_reads_is_used(run_dir, capsys):
    """The counterpart: eval_episodes and seed of a readable config set the episodes."""
    from neurorun.common.seeding import derive_seed
    from neurorun.tools.evaluate import evaluate

    saved = run_dir / ".hydra" / "config.yaml"
    saved.parent.mkdir()
    saved.write_text("env: {id: CartPole-v1}\neval_episodes: 3\nseed: 7\n")
    first = derive_seed(7, "evaluation")
    summary = evaluate(str(run_dir))
    assert [episode["seed"] for episode in summary["episodes"]] == [first, first + 1, first + 2]
    assert summary["as_run"] is True


@pytest.mark.parametrize("tool", [PLOT_TOOL, "compare"])
def test_skipped_metrics_lines_are_counted_in_one_warning(tool, tmp_path, capsys):
    """They were left out without a word; a last line a run is still writing is
    no news."""
    from neurorun.tools.runs import read_metrics

    run = tmp_path / "run"
    run.mkdir()
    rows = [{"generation": 1, "mean_eval": 2.0}, {"generation": 2, "mean_eval": 5.0}]
    lines = [json.dumps(rows[0]), "garbage", "[" * 100_000 + "]" * 100_000, "7",
             json.dumps(rows[1]), '{"generation": 3, "mean']  # the last: no newline yet
    path = run / "metrics.jsonl"
    path.write_text("\n".join(lines))
    with pytest.warns(UserWarning, match=rf"^{path}: 3 of its 6 lines are no JSON object"):
        metrics = read_metrics(run)
    assert metrics["generation"].tolist() == [1, 2] and metrics["mean_eval"].tolist() == [2, 5]
    argv = [str(run)] + (["--out", str(tmp_path / "curves.png")] if tool == "plot" else [])
    assert TOOLS[tool](argv) == 0
    warned = [line for line in capsys.readouterr().err.splitlines() if "JSON" in line]
    assert warned == [f"warning: {path}: 3 of its 6 lines are no JSON object (a run writes one "
                      "per generation): left out"]


@pytest.mark.parametrize(("value", "expected"), [
    (5, ["has format 5", "formats up to 4", "upgrade neurorun"]),
    ("4", ["format is '4'", "this neurorun's is 4"]),
])
def test_a_policy_json_of_a_newer_or_malformed_format_is_one_line(tmp_path, capsys, value,
                                                                  expected):
    """A later neurorun's policy file: its keys may mean other things, so it is not read."""
    run = save_checkpoint(tmp_path / "run")
    path = run / "checkpoints" / "best.json"
    meta = json.loads(path.read_text())
    assert meta["format"] == 4  # as a run writes it
    path.write_text(json.dumps({**meta, "format": value}))
    fails_with(capsys, "eval", [str(run), "--episodes", "1"], str(path), *expected)
