"""Reward shaping changes only the fitness the algorithm sees: center_eval, best policies and
target_score use the env's own return."""

import json

from neurorun.cli.app import compose_config
from neurorun.loop.runner import run

from .toy_env import TOY_ID, register_toy_env


def test_center_eval_and_target_use_the_unshaped_return(tmp_path):
    register_toy_env()
    # The toy env pays 1 + action per step, action in [-1, 1], for 4 to 6 steps: every return
    # lies in [0, 12]. Subtracting 100 per step puts every shaped return below -300.
    cfg = compose_config([
        "debug=default", "logger.console.quiet=true", f"env={TOY_ID}", "generations=3",
        "problem.decrease_rewards_by=100", "env.target_score=0"])
    result = run(cfg, run_dir=tmp_path)
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert all(row["mean_eval"] < -300 for row in rows)  # the algorithm saw shaped fitness
    assert all(0 <= row["episode_return_min"] <= row["episode_return_max"] <= 12 for row in rows)
    assert 0 <= rows[0]["center_eval"] <= 12
    # the target (0) is reached by the unshaped return at once, never by the shaped one
    assert result["stop_reason"].startswith("target_score") and len(rows) == 1
    assert 0 <= json.loads((tmp_path / "checkpoints" / "best.json").read_text())["score"] <= 12
