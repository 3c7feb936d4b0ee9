"""A non-finite center evaluation is never solved nor best, is counted, and JSON stays strict."""

import json

import pytest
import torch

from neurorun.cli.app import compose_config
from neurorun.common.seeding import derive_seed
from neurorun.loop.runner import run

from .toy_env import TOY_ID, register_toy_env

TEST_SEED = derive_seed(0, "evaluation")  # the first seeded test episode of seed=0


def strict(text):
    def refuse(constant):
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("option", ["inf_reward_seed", "nan_reward_seed", "nan_obs_seed"])
def test_a_nonfinite_center_is_never_solved_or_best(tmp_path, option):
    register_toy_env()
    cfg = compose_config([
        "debug=default", "logger.console.quiet=true", f"env={TOY_ID}", "generations=3",
        "env.target_score=0", "eval_episodes=1", f"+env.env_config.{option}={TEST_SEED}",
        "+env.env_config.length=4"])
    result = run(cfg, run_dir=tmp_path)
    assert result["stop_reason"] == "generations: 3 of 3 done"  # not "target_score reached"
    assert result["best_center_eval"] is None and result["nonfinite_center_evals"] == 3
    rows = [strict(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["center_eval"] for r in rows] == [None, None, None]
    assert [r["nonfinite_center_evals"] for r in rows] == [1, 2, 3]
    for name in ("best.json", "last.json"):
        strict((tmp_path / "checkpoints" / name).read_text())


def test_a_test_episode_that_met_a_nan_observation_returns_nan():
    """The toy's episode seeded TEST_SEED returns 1 per step (action 0) and NaN observations
    after step 2: its return so far (2) must not pass for a finished episode's."""
    from neurorun.problems import make_problem

    register_toy_env()
    problem = make_problem(TOY_ID, env_config={"nan_obs_seed": TEST_SEED, "length": 4},
                           vectorization="sync")
    solution = torch.zeros(problem.solution_length)
    returns, _ = problem.test_episodes(solution, 2, TEST_SEED)
    assert returns[0].isnan() and returns[1] == 4 + (TEST_SEED + 1) % 3  # the next seed: fine
    problem.close()
