"""Every brax and Playground preset runs past its first generation as a user runs it: two
generations from a cold compilation cache, then a resume to the third on the warm one, the
center evaluated each generation.

Each preset is shrunk only where the shrink keeps the code path it takes as shipped:
- a shorter episode cut (``problem.episode_length``): brax's humanoid and ant still fall at
  different steps within it (the queue moves slots at different times); Playground's DM Control
  tasks never end early, as shipped;
- a smaller population only where the shipped one is larger than a test can afford, and never
  so small that the queue's tail and the drain are left out: more pairs a device than the
  drain's slots (``DRAIN_SLOTS``), so the queue program runs, then hands its last busy slots to
  the drain program;
- an adaptive popsize keeps its ``num_interactions`` (several rounds a generation), smaller.

The headline runs as typed, from an empty compilation cache and then on the warm one; the other
presets run in the test process (the config the command composes, the same runner), sharing one
cache: a test costs about one compile of its env's programs on a CPU (seconds for
inverted_pendulum, about a minute for the humanoid), less where another preset compiled them.
"""

from __future__ import annotations

import csv
import logging
import math
import shlex
from pathlib import Path

import pytest

from tests.cli.test_cli import neurorun

pytestmark = pytest.mark.extras("jax")

TEST_BUDGET = ["logger.console.quiet=true", "eval_episodes=2"]
BRAX_CUT = "problem.episode_length=100"  # random linear policies fall within it, at many steps
DM_CONTROL_CUT = "problem.episode_length=40"  # DM Control episodes end at their length only
# the popsize that keeps the queue and the drain: above DRAIN_SLOTS (16) pairs on each of 2
# devices
QUEUE_POPSIZE = "algo.popsize=64"

# command as typed (README, docs) -> (the shrink, whether its population runs the queue)
PRESETS = {
    # the design's headline, as composed: popsize 128 on 2 devices (a 2-core machine's)
    "algo=pgpe env=brax::humanoid": ([BRAX_CUT, "problem.devices=2"], True),
    "algo=ars env=brax::humanoid": ([BRAX_CUT, "problem.devices=2"], True),
    "algo=openai_es env=brax::humanoid": ([BRAX_CUT, "problem.devices=2"], True),
    "algo=snes env=brax::humanoid": ([BRAX_CUT, "problem.devices=2"], True),
    "algo=sep_cmaes env=brax::humanoid": ([BRAX_CUT, "problem.devices=2"], True),
    "env=brax::ant": ([BRAX_CUT], False),
    "env=brax::inverted_pendulum": ([BRAX_CUT], False),
    "env=playground::CartpoleBalance": ([DM_CONTROL_CUT], False),
    "env=playground::CartpoleSwingup": ([DM_CONTROL_CUT], False),
    "env=playground::CheetahRun": ([DM_CONTROL_CUT], False),
    "env=playground::WalkerWalk": ([DM_CONTROL_CUT], False),
    "env=playground::HumanoidWalk": ([DM_CONTROL_CUT], False),
    # popsize 4,000 and 3M steps a generation: 64 and a budget of several rounds
    "experiment=brax_humanoid": ([BRAX_CUT, QUEUE_POPSIZE, "algo.num_interactions=6000",
                                  "problem.devices=2"], True),
    "experiment=brax_inverted_pendulum": ([BRAX_CUT], False),
    "experiment=playground_cartpole_balance": ([DM_CONTROL_CUT], False),
    # popsize 128: kept, with its MLP and normalized observations
    "experiment=playground_cartpole_swingup": ([DM_CONTROL_CUT, "problem.devices=2"], True),
    # popsize 1,024, the center every 4 generations: 64, every generation
    "experiment=playground_cheetah_run": ([DM_CONTROL_CUT, QUEUE_POPSIZE, "eval_every=1",
                                           "problem.devices=2"], True),
    # one device holds the whole queue: 40 pairs, its tail handed to the drain
    "env=brax::inverted_pendulum algo.popsize=40 problem.devices=1": ([BRAX_CUT], True),
}


def _rows(run_dir: Path) -> list[dict[str, str]]:
    with open(run_dir / "metrics.csv", newline="") as file:
        return list(csv.DictReader(file))


def _assert_three_generations(command: str, run_dir: Path, said: str, queued: bool) -> None:
    """Three rows, the center evaluated in each; the queue's programs where the population
    needs them (``said``: the first run's log); brax episodes ended at different steps."""
    assert ("the queue program of" in said) == queued, said[-3000:]
    assert "the drain program of" in said
    rows = _rows(run_dir)
    assert [row["generation"] for row in rows] == ["1", "2", "3"]
    for row in rows:
        assert math.isfinite(float(row["center_eval"])), row
        assert int(row["interactions"]) > 0
    if "brax" in command:
        lengths = [(float(r["episode_length_min"]), float(r["episode_length_max"])) for r in rows]
        assert any(low < high for low, high in lengths), lengths


HEADLINE = "algo=pgpe env=brax::humanoid"


def test_the_headline_runs_as_typed_from_a_cold_cache_then_resumes_on_the_warm_one(tmp_path):
    """As a user types it (the console script), its programs compiled anew, then loaded."""
    shrink, queued = PRESETS[HEADLINE]
    env = {"JAX_COMPILATION_CACHE_DIR": str(tmp_path / "jax-cache")}
    run_dir = tmp_path / "run"
    first = neurorun(*shlex.split(HEADLINE), *shrink, *TEST_BUDGET, "generations=2",
                     f"hydra.run.dir={run_dir}", cwd=tmp_path, timeout=900, env=env)
    assert first.returncode == 0, first.stderr[-3000:]
    said = (run_dir / "neurorun.log").read_text()
    assert "compiled the queue program" in said and "compiled the drain program" in said
    resumed = neurorun(f"resume={run_dir}", "generations=3", cwd=tmp_path, timeout=900, env=env)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    later = (run_dir / "neurorun.log").read_text()[len(said):]
    assert "loaded the queue program" in later and "compiled the" not in later
    _assert_three_generations(HEADLINE, run_dir, said, queued)


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory):
    """One jax compilation cache for the presets of the session (every test worker's): a
    preset whose programs another compiled loads them."""
    import jax

    from neurorun.envs.jax_env import use_compilation_cache

    folder = tmp_path_factory.getbasetemp().parent / "jax-presets-cache"
    folder.mkdir(exist_ok=True)
    before = jax.config.jax_compilation_cache_dir
    jax.config.update("jax_compilation_cache_dir", str(folder))
    use_compilation_cache()
    yield folder
    jax.config.update("jax_compilation_cache_dir", before)


@pytest.mark.parametrize("command", [c for c in PRESETS if c != HEADLINE])
def test_a_jax_preset_runs_three_generations_with_a_resume_between(tmp_path, command, caplog,
                                                                   shared_cache):
    from neurorun.cli.app import compose_config
    from neurorun.config import resume
    from neurorun.loop.runner import run

    shrink, queued = PRESETS[command]
    run_dir = tmp_path / "run"
    with caplog.at_level(logging.INFO, logger="neurorun"):
        run(compose_config([*shlex.split(command), *shrink, *TEST_BUDGET, "generations=2"]),
            run_dir=run_dir)
    said = caplog.text
    run(resume.load_run_config(run_dir, ["generations=3"]), run_dir=run_dir)
    _assert_three_generations(command, run_dir, said, queued)
