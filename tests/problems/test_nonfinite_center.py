"""A non-finite center evaluation is never solved nor best, is counted, and JSON stays strict."""

import json

import pytest

from neurorun.cli import compose_config
from neurorun.runner import run
from neurorun.seeding import derive_seed

from .toy_env import TOY_ID, register_toy_env

TEST_SEED = derive_seed(0, "evaluation")  # the first seeded test episode of seed=0


def strict(text):
    def refuse(constant):
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("option", ["inf_reward_seed", "nan_reward_seed"])
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
