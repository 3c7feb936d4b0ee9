"""neurorun-eval against a plain gymnasium loop with the raw weights and the same seeds."""

from __future__ import annotations

import json
import math
import pickle
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
import torch

from neurorun.tools import evaluate as evaluate_tool
from neurorun.tools import loading

from .helpers import BIAS, SOLUTION, WEIGHT, save_checkpoint, save_policy


def expected_episodes(seed: int, episodes: int, mean=None, stdev=None, limit=None):
    """(returns, lengths) of argmax(W @ obs + b) on CartPole-v1, episode i seeded seed + i."""
    env = gym.make("CartPole-v1")
    returns, lengths = [], []
    for index in range(episodes):
        obs, _ = env.reset(seed=seed + index)
        total, length, done = 0.0, 0, False
        while not done:
            x = obs if mean is None else (obs - mean) / stdev
            obs, reward, terminated, truncated, _ = env.step(int(np.argmax(WEIGHT @ x + BIAS)))
            total += reward
            length += 1
            done = terminated or truncated or length == limit
        returns.append(total)
        lengths.append(length)
    env.close()
    return returns, lengths


@pytest.mark.parametrize("name", ["best.pt", "best.pkl", ""])
def test_eval_matches_a_plain_gymnasium_loop(run_dir, name):
    path = run_dir / "checkpoints" / name if name else run_dir
    summary = evaluate_tool.evaluate(str(path), episodes=4, seed=3,
                                     trust_pickle=name.endswith(".pkl"))
    returns, lengths = expected_episodes(3, 4)
    assert [e["return"] for e in summary["episodes"]] == returns
    assert [e["length"] for e in summary["episodes"]] == lengths
    assert [e["seed"] for e in summary["episodes"]] == [3, 4, 5, 6]
    assert summary["return_mean"] == pytest.approx(np.mean(returns))
    assert summary["return_std"] == pytest.approx(np.std(returns))
    assert len(set(returns)) > 1  # the seeds matter: a check that could fail


@pytest.mark.parametrize("name", ["best.pt", "best.pkl"])
def test_eval_applies_the_saved_obs_normalization(tmp_path, name):
    run = save_checkpoint(tmp_path / "run", normalize=True)
    with open(run / "checkpoints" / "best.pkl", "rb") as file:
        saved = pickle.load(file)
    mean, stdev = saved["obs_mean"].numpy(), saved["obs_stdev"].numpy()
    summary = evaluate_tool.evaluate(str(run / "checkpoints" / name), episodes=3, seed=0,
                                     trust_pickle=True)
    returns, _ = expected_episodes(0, 3, mean.astype(np.float64), stdev.astype(np.float64))
    assert [e["return"] for e in summary["episodes"]] == returns


def test_max_steps_cuts_episodes(run_dir):
    summary = evaluate_tool.evaluate(str(run_dir), episodes=3, seed=3, max_steps=20)
    assert [e["length"] for e in summary["episodes"]] == expected_episodes(3, 3, limit=20)[1]
    assert summary["max_steps"] == 20


def test_a_run_folder_is_read_through_its_weights_first(run_dir, monkeypatch):
    monkeypatch.setattr(loading, "_load_pickle", lambda *a: pytest.fail("unpickled"))
    assert loading.load_policy(run_dir, trust_pickle=True).source.suffix == ".pt"


def test_main_json_and_table(run_dir, capsys):
    assert evaluate_tool.main([str(run_dir), "--episodes", "2", "--seed", "3", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert [e["return"] for e in summary["episodes"]] == expected_episodes(3, 2)[0]
    assert evaluate_tool.main([str(run_dir), "--episodes", "2", "--seed", "3"]) == 0
    table = capsys.readouterr().out
    returns = expected_episodes(3, 2)[0]
    assert f"{np.mean(returns):.2f} ± {np.std(returns):.2f}" in table


def test_fresh_process_from_the_weights_alone(run_dir, tmp_path):
    """Only the .pt and .json, no run config, in a new interpreter."""
    alone = tmp_path / "alone"
    alone.mkdir()
    for suffix in (".pt", ".json"):
        (alone / f"policy{suffix}").write_bytes(
            (run_dir / "checkpoints" / f"best{suffix}").read_bytes())
    result = subprocess.run(
        [sys.executable, "-m", "neurorun.tools.evaluate", str(alone / "policy.pt"),
         "--episodes", "2", "--seed", "3", "--json"], capture_output=True, text=True,
        check=True)
    summary = json.loads(result.stdout)
    assert [e["return"] for e in summary["episodes"]] == expected_episodes(3, 2)[0]
    assert "warning" not in result.stderr  # weights only: nothing to warn about


@pytest.mark.parametrize(("env", "floor"), [
    ("Pendulum-v1", None),
    pytest.param("envpool::Pendulum-v1", None, marks=pytest.mark.extras("envpool")),
    # its velocity's variance is below the default floor: the policy file keeps the run's 0
    ("MountainCarContinuous-v0", "problem.observation_min_variance=0"),
])
def test_eval_of_a_run_reproduces_its_center_eval(tmp_path, env, floor):
    """The run's own test episodes (same seeds, frozen obs statistics): its last center_eval."""
    import csv

    from neurorun.cli.app import compose_config
    from neurorun.common.seeding import derive_seed
    from neurorun.loop.runner import run

    cfg = compose_config(["debug=default", "logger.console.quiet=true", f"env={env}",
                          "generations=3", "eval_episodes=3", "seed=4",
                          "problem.observation_normalization=true",
                          *([floor] if floor else [])])
    run(cfg, run_dir=tmp_path / "run")
    with open(tmp_path / "run" / "metrics.csv", newline="") as file:
        last = list(csv.DictReader(file))[-1]
    summary = evaluate_tool.evaluate(str(tmp_path / "run"), episodes=3, checkpoint="last",
                                     seed=derive_seed(4, "evaluation"))
    assert summary["return_mean"] == pytest.approx(float(last["center_eval"]), rel=1e-12)
    pickled = evaluate_tool.evaluate(str(tmp_path / "run" / "checkpoints" / "last.pkl"),
                                     episodes=3, seed=derive_seed(4, "evaluation"),
                                     trust_pickle=True)  # its floor is in last.json
    assert pickled["return_mean"] == summary["return_mean"]


def test_eval_of_a_run_with_no_options_is_its_best_center_eval(tmp_path, capsys):
    """No --seed/--episodes evaluates as the run evaluated its center (its
    seed stream, eval_episodes, episode_length) and shows the run's own figure beside it."""
    import csv

    from neurorun.cli.app import compose_config
    from neurorun.loop.runner import run

    cfg = compose_config(["debug=default", "logger.console.quiet=true", "env=Pendulum-v1",
                          "generations=3", "eval_episodes=3", "seed=4",
                          "problem.observation_normalization=true"])
    run(cfg, run_dir=tmp_path / "run")
    capsys.readouterr()  # the run's own stop line
    with open(tmp_path / "run" / "metrics.csv", newline="") as file:
        best = max(float(row["center_eval"]) for row in csv.DictReader(file))
    assert evaluate_tool.main([str(tmp_path / "run"), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert len(summary["episodes"]) == 3
    assert summary["return_mean"] == best
    assert summary["recorded_center_eval"] == best
    assert evaluate_tool.main([str(tmp_path / "run")]) == 0
    assert capsys.readouterr().out.count(f"{best:.2f}") == 2  # the new mean and the run's
    other = evaluate_tool.evaluate(str(tmp_path / "run"), seed=0)  # --seed still chooses
    assert [e["seed"] for e in other["episodes"]] == [0, 1, 2]


def test_an_eval_that_cannot_fit_in_memory_is_refused_before_it_starts(run_dir, monkeypatch,
                                                                       capsys):
    """The largest count that fits, from the memory available."""
    from neurorun.problems import Problem
    from neurorun.tools import episodes

    monkeypatch.setattr(episodes, "available_memory", lambda: 100_000_000)
    monkeypatch.setattr(Problem, "test_episodes", lambda *a: pytest.fail("episodes ran"))
    assert evaluate_tool.main([str(run_dir), "--episodes", "1000000000000"]) == 2
    err = capsys.readouterr().err
    fits = int(0.8 * 100_000_000) // episodes.EPISODE_BYTES
    assert err.count("\n") == 1 and f"--episodes {fits} or fewer" in err
    assert "--episodes 1000000000000 would hold" in err  # as typed: a value to paste back


def test_test_episodes_run_a_bounded_number_of_envs_at_a_time(monkeypatch):
    """Episodes stream through at most TEST_SLOTS env slots, seeded as one
    batch would be (gymnasium: episode k seeded seed + k)."""
    from neurorun.problems import env_cache, evaluation, make_problem

    made = make_problem("CartPole-v1", "Linear(obs_length, act_length)")
    solution = torch.from_numpy(SOLUTION)
    whole = made.test_episodes(solution, 7, 3)
    monkeypatch.setattr(evaluation, "TEST_SLOTS", 3)
    sizes = []
    make_env = env_cache.make_env
    monkeypatch.setattr(env_cache, "make_env", lambda spec, n, **kw: (sizes.append(n),
                                                                      make_env(spec, n, **kw))[1])
    made.close()
    chunked = made.test_episodes(solution, 7, 3)
    made.close()
    assert max(sizes) == 3
    assert chunked[0].tolist() == whole[0].tolist() == expected_episodes(3, 7)[0]
    assert chunked[1].tolist() == whole[1].tolist()


def test_a_policy_alone_keeps_an_infinite_env_setting(tmp_path):
    """A keyword of infinity (as Hopper's healthy_z_range holds) written to the .json as null
    would rebuild another env, or none: MountainCar's ``velocity >= None`` fails."""
    setting = {"goal_velocity": -math.inf}
    run = save_policy(tmp_path / "run", "MountainCarContinuous-v0",
                      "Linear(obs_length, act_length)", torch.zeros(3), env_config=setting)
    meta = json.loads((run / "checkpoints" / "best.json").read_text())
    assert meta["env_config"] == setting
    summary = evaluate_tool.evaluate(str(run / "checkpoints" / "best.pt"), episodes=2, seed=5)
    env = gym.make("MountainCarContinuous-v0", **setting)
    lengths = []
    for index in range(2):
        env.reset(seed=5 + index)
        length, done = 0, False
        while not done:  # a zero policy: no force
            _, _, terminated, truncated, _ = env.step(np.zeros(1, dtype=np.float32))
            length, done = length + 1, terminated or truncated
        lengths.append(length)
    assert [e["length"] for e in summary["episodes"]] == lengths
