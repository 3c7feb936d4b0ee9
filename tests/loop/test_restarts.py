"""Restart strategies: each attempt's popsize and step size (hand-computed sequences), and a
run that restarts with a growing population resumes exactly."""

import dataclasses

import numpy as np
import pytest
import torch

from neurorun.algorithms import ALGORITHMS
from neurorun.common.errors import ConfigError
from neurorun.common.seeding import derive_seed
from neurorun.loop.restarts import Attempt, RestartSchedule, StallWatch
from neurorun.loop.runner import run
from tests.loop.test_runner import metrics, tiny, without_time


def attempts(schedule, generations):
    """Run ``generations[k]`` generations of each attempt k (never stalling); the sizes."""
    sizes = []
    for count in generations:
        sizes.append(schedule.attempt.popsize)
        for _ in range(count):
            schedule.restart_due(schedule.attempt.popsize, None)
        schedule.next_attempt()
    return sizes


def test_same_keeps_the_popsize():
    assert attempts(RestartSchedule("same", 10), [3, 3, 3]) == [10, 10, 10]


def test_ipop_multiplies_the_popsize_at_each_restart():
    assert attempts(RestartSchedule("ipop", 10), [3, 3, 3, 3]) == [10, 20, 40, 80]
    # floor(10 x 1.5^k): 15, 22, 33; whole pairs round up: 16, 22, 34
    assert attempts(RestartSchedule("ipop", 10, 1.5), [1] * 4) == [10, 15, 22, 33]
    assert attempts(RestartSchedule("ipop", 10, 1.5, mirrored=True), [1] * 4) == [10, 16, 22, 34]


def test_bipop_alternates_regimes_by_their_budgets():
    schedule = RestartSchedule("bipop", 10, seed=7)
    # attempt 0 (counted as small): 10 generations x 10 = 100 evaluations
    # restart 1: small 100 >= max(1, large 0) -> large, 10 x 2^1
    # restart 2: small 100 >= large 100 -> large, 10 x 2^2
    assert attempts(schedule, [10, 5, 10]) == [10, 20, 40]
    assert schedule.evaluations == {"small": 100, "large": 5 * 20 + 10 * 40}
    # restart 3: small 100 < large 500 -> small: two large attempts so far, multiplier 2^2,
    # popsize floor(10 x 4^(u^2)), step 0.01^v, at most floor(0.5 x 500 / popsize) generations
    small = schedule.attempt
    u, v = np.random.default_rng(derive_seed(7, "restart", 3)).random(2)
    popsize = int(10 * 4 ** (u * u))
    assert (small.regime, small.popsize) == ("small", popsize)
    assert small.step_factor == pytest.approx(0.01 ** v)
    assert small.max_generations == 250 // popsize
    for generation in range(1, small.max_generations + 1):
        assert schedule.restart_due(popsize, None) is (generation == small.max_generations)
    schedule.next_attempt()
    # restart 4: small 100 + 250 // popsize x popsize vs large 500: small again while below
    used = 100 + (250 // popsize) * popsize
    assert schedule.attempt.regime == ("small" if used < 500 else "large")
    # a large attempt after one small restart: 10 x 2^(restarts - small restarts)
    assert attempts(RestartSchedule("bipop", 10), [1, 1]) == [10, 20]


def test_a_small_attempt_scales_whichever_step_size_is_set():
    attempt = Attempt(30, step_factor=0.1, regime="small")
    steps = ALGORITHMS["pgpe"].STEP_SIZES
    assert attempt.options({"stdev_init": [1.0, 2.0], "radius_init": None}, steps) == {
        "stdev_init": [0.1, 0.2], "radius_init": None}
    assert attempt.options({"noise": 0.03}, ALGORITHMS["ars"].STEP_SIZES) == {
        "noise": pytest.approx(0.003)}
    assert attempt.options({"noise": 0.03}, steps) == {"noise": 0.03}  # not pgpe's
    # an adaptive popsize keeps a cap of at least one round
    assert attempt.options({"popsize_max": 20, "radius_init": 4.0}, steps) == {
        "popsize_max": 30, "radius_init": pytest.approx(0.4)}


def test_the_stall_rule_restarts_the_attempt():
    schedule = RestartSchedule("ipop", 4, stall=StallWatch(patience=1, min_improvement=0.0))
    assert schedule.restart_due(4, 1.0) is False
    assert schedule.restart_due(4, 1.0) is True  # no rise in 1 evaluation
    schedule.next_attempt()
    assert schedule.stall.history == [] and schedule.attempt.popsize == 8


STALLED = ["restart.patience=2", "algo.center_learning_rate=1e-12",
           "algo.stdev_learning_rate=1e-12", "problem.initial_bounds=[-0.5,0.5]",
           "checkpoint_every=1"]


def test_an_ipop_run_grows_its_population_and_resumes_exactly(tmp_path):
    """The center never moves, so every third center evaluation of an attempt restarts it."""
    common = [*STALLED, "restart.strategy=ipop", "seed=3"]
    run(tiny(*common, "generations=9"), run_dir=tmp_path / "straight")
    rows = metrics(tmp_path / "straight")
    assert [int(r["restarts"]) for r in rows] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert [int(r["popsize"]) for r in rows] == [10] * 3 + [20] * 3 + [40] * 3
    cut = tmp_path / "cut"
    run(tiny(*common, "generations=5"), run_dir=cut)
    from neurorun.config.resume import load_run_config

    run(load_run_config(cut, ["generations=9"]), run_dir=cut)
    assert without_time(metrics(cut)) == without_time(rows)


@pytest.mark.parametrize("strategy", ["ipop", "bipop"])
def test_ars_sized_by_its_directions_restarts_at_another_popsize(tmp_path, strategy):
    """algo.num_directions=3 fixed popsize 6: the first restart's popsize 12 was refused as
    a config error mid-run. An attempt sets the popsize; its directions follow it."""
    run(tiny("algo=ars", "algo.popsize=null", "algo.num_directions=3",
             "algo.top_directions=null", "algo.step_size=1e-12", "restart.patience=2",
             "problem.initial_bounds=[-0.5,0.5]", f"restart.strategy={strategy}",
             "generations=6", "seed=3"), run_dir=tmp_path)
    rows = metrics(tmp_path)
    assert [int(r["restarts"]) for r in rows] == [0, 0, 0, 1, 1, 1]
    assert [int(r["popsize"]) for r in rows] == [6] * 3 + [12] * 3  # 2 x 6, 6 directions


def test_a_bipop_run_takes_small_attempts_after_a_large_one_and_resumes_exactly(tmp_path):
    from neurorun.config.resume import load_run_config

    common = [*STALLED, "restart.strategy=bipop", "seed=3"]
    run(tiny(*common, "generations=10"), run_dir=tmp_path / "straight")
    rows = metrics(tmp_path / "straight")
    # attempt 0 counts as small: 3 x 10 = 30; restart 1: 30 >= max(1, 0) -> large, 3 x 20 = 60;
    # restart 2: 30 < 60 -> small, popsize floor(10 x 2^(u^2)) (whole pairs), capped at
    # floor(0.5 x 60 / popsize) generations
    u, _ = np.random.default_rng(derive_seed(3, "restart", 2)).random(2)
    popsize = int(10 * 2 ** (u * u))
    popsize += popsize % 2  # PGPE samples whole pairs
    cap = min(3, 30 // popsize)  # or a stall after 3 center evaluations
    sizes = [int(r["popsize"]) for r in rows]
    assert sizes[:6 + cap] == [10] * 3 + [20] * 3 + [popsize] * cap
    assert [int(r["restarts"]) for r in rows][:7 + cap] == [0] * 3 + [1] * 3 + [2] * cap + [3]
    cut = tmp_path / "cut"
    run(tiny(*common, "generations=7"), run_dir=cut)
    run(load_run_config(cut, ["generations=10"]), run_dir=cut)
    assert without_time(metrics(cut)) == without_time(rows)


@pytest.mark.parametrize(("overrides", "expected"), [
    (["restart.strategy=grow"], "restart.strategy='grow': expected one of same, ipop, bipop"),
    (["restart.strategy=ipop", "restart.patience=2", "restart.popsize_factor=0.5"],
     "restart.popsize_factor=0.5: expected a finite number in [1, 100]"),
    (["restart.strategy=ipop"], "restart.strategy=ipop grows the popsize at each restart, but "
                                "restart.patience=null never restarts"),
])
def test_bad_restart_settings_are_refused_with_the_fix(tmp_path, overrides, expected):
    with pytest.raises(ConfigError, match="Fix: restart") as caught:
        run(tiny(*overrides, "generations=5"), run_dir=tmp_path / "run")
    assert expected in str(caught.value)


def test_the_library_refuses_an_unknown_strategy_as_the_config_checks_do():
    with pytest.raises(ValueError, match="strategy='grow': expected one of same, ipop, bipop"):
        RestartSchedule(strategy="grow", popsize=10)


def test_a_crafted_restart_record_is_refused(tmp_path):
    from neurorun.config.resume import load_run_config

    run_dir = tmp_path / "run"
    run(tiny(*STALLED, "restart.strategy=ipop", "generations=5"), run_dir=run_dir)
    state_path = run_dir / "checkpoints" / "state.pt"
    state = torch.load(state_path, weights_only=True)
    state["restart"]["attempt"]["popsize"] = 0
    torch.save(state, state_path)
    with pytest.raises(ConfigError, match=r"restart.attempt.popsize is 0, expected a whole number "
                                          r"from 1"):
        run(load_run_config(run_dir, ["generations=6"]), run_dir=run_dir)


def test_a_config_without_restart_keys_gets_the_packaged_values():
    """A run saved before restarts existed reads what config.yaml sets today: never restart."""
    from omegaconf import OmegaConf

    from neurorun.cli.app import compose_config
    from neurorun.config.schema import load_config
    packaged = OmegaConf.to_container(compose_config([]).restart)
    without = OmegaConf.to_container(compose_config([]), resolve=True)
    del without["restart"]
    assert dataclasses.asdict(load_config(without).restart) == packaged
    without["restart"] = {"patience": 3}
    assert dataclasses.asdict(load_config(without).restart) == {**packaged, "patience": 3}
    assert StallWatch(None).min_improvement == packaged["min_improvement"]
    assert RestartSchedule("ipop", 4).factor == packaged["popsize_factor"]


def test_a_restart_checks_its_grown_generation_with_the_center_evaluation(tmp_path, monkeypatch):
    """The memory check of a restart's popsize counts the center's test episodes too, as the
    check before the run does (a restart dropped them)."""
    from neurorun.problems import Problem

    checked = []
    original = Problem.check_capacity
    monkeypatch.setattr(Problem, "check_capacity", lambda self, *args: (
        checked.append(args), original(self, *args))[1])
    run(tiny(*STALLED, "restart.strategy=ipop", "generations=4", "eval_episodes=3"),
        run_dir=tmp_path / "run")
    assert checked == [(10, 3), (20, 3)]  # before the run, then at the restart after 3
