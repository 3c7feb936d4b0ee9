"""The compiled evaluation of jax envs against the step-by-step path (the torch policy and the
Python rollout loop over ``JaxVecEnv``): same seeds, same fitness, counts, episodes and
observation statistics, to float rounding.

brax ant is chaotic: a 1e-7 change of an action changes episode lengths within tens of steps,
and its physics rounds differently at another batch size. Its policies therefore end in
``Bin(-1, 1)`` (actions exactly +-1 on both paths, whatever the rounding of the network; the
network forms are compared layer by layer in tests/nets/test_arrays.py) and it runs without
stages (one batch). The default suite compiles one case per env (each program takes seconds
to a minute to compile on a CPU); the other networks and lock-step are marked slow.
"""

from __future__ import annotations

import dataclasses
import logging

import pytest
import torch
from nets import user_policies

from neurorun.problems import make_problem
from neurorun.problems.running_norm import RunningNorm

pytestmark = pytest.mark.extras("jax")

POPSIZE, SLOTS = 6, 4  # 2 episodes each: 12 (solution, episode) pairs on 4 env slots
SHAPING = {"decrease_rewards_by": 0.5, "alive_bonus_schedule": [2, 6, 1.5]}
MLP = "Linear(obs_length, 8) >> Tanh() >> Linear(8, act_length)"
LSTM = "LSTM(obs_length, 6) >> Linear(6, act_length)"


def _problems(env: str, network: str, length: int, **options):
    kwargs = dict(env=env, network=network, episode_length=length, num_episodes=2,
                  max_num_envs=SLOTS, observation_normalization=True, seed=3, **SHAPING,
                  devices=1, **options)  # several devices: tests/problems/test_devices.py
    return make_problem(jit=False, **kwargs), make_problem(jit=True, **kwargs)


def _population(problem, generation: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(generation)
    return torch.randn(POPSIZE, problem.solution_length, generator=generator)


def _assert_same_evaluations(stepwise, compiled, generations: int = 2,
                             test_rtol: float = 1e-5) -> None:
    assert compiled.jax_rollout is not None and stepwise.jax_rollout is None
    for generation in range(generations):  # the second one normalizes with collected stats
        params = _population(stepwise, generation)
        expected, got = stepwise.evaluate(params), compiled.evaluate(params)
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-4)
        a, b = stepwise.last_stats, compiled.last_stats
        for key in ("num_interactions", "num_episodes", "nonfinite_count", "num_vector_steps"):
            assert getattr(b, key) == getattr(a, key), key
        assert b.num_simulated_steps <= a.num_simulated_steps
        for key in ("episode_return_min", "episode_return_mean", "episode_return_max",
                    "episode_length_min", "episode_length_mean", "episode_length_max"):
            assert getattr(b, key) == pytest.approx(getattr(a, key), rel=1e-5, abs=1e-4), key
        _assert_same_statistics(stepwise.obs_stats, compiled.obs_stats)
    assert (compiled.interaction_count, compiled.episode_count) == (
        stepwise.interaction_count, stepwise.episode_count)
    solution = _population(stepwise, 9)[0]
    torch.testing.assert_close(compiled.test_episodes(solution, 3, seed=11)[0],
                               stepwise.test_episodes(solution, 3, seed=11)[0],
                               rtol=test_rtol, atol=1e-4)


def _assert_same_statistics(a: RunningNorm, b: RunningNorm) -> None:
    """Counts exactly; sums to rounding: the two paths compile the physics in separate
    programs, which round differently, and the dynamics carry that along an episode (seen:
    6e-5 relative on inverted_pendulum's observation sums over 40-step episodes)."""
    assert float(b.count) == float(a.count) > 0
    torch.testing.assert_close(b.mean, a.mean, rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(b.stdev, a.stdev, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("network", [
    pytest.param("Linear(obs_length, act_length)", marks=pytest.mark.slow),
    pytest.param(MLP, marks=pytest.mark.slow), LSTM])
def test_brax_inverted_pendulum_equals_the_step_by_step_path(network):
    stepwise, compiled = _problems("brax::inverted_pendulum", network, 40)
    _assert_same_evaluations(stepwise, compiled)


def test_brax_ant_equals_the_step_by_step_path_with_a_recurrent_policy():
    stepwise, compiled = _problems("brax::ant", f"{LSTM} >> Bin(-1, 1)", 60)
    compiled.jax_rollout.one_batch = True
    # its 3 test episodes run as a batch of their own, whose physics rounds apart on the two
    # paths: on an AMD EPYC (AVX2) host a 60-step return differed by 6e-4 relative while the
    # training batch agreed to 1e-7; a wrong seed, norm or policy state is off by far more
    _assert_same_evaluations(stepwise, compiled, generations=1, test_rtol=1e-3)


def test_a_curriculum_cuts_the_compiled_episodes_where_the_step_by_step_path_does():
    """[[0, 12], [400, 30]] over 40-step episodes: the first generation's cut is 12, the
    second's 12 + 18 * 60 // 400 = 14 (after its 60 interactions)."""
    stepwise, compiled = _problems("brax::inverted_pendulum", LSTM, 40,
                                   episode_length_schedule=[[0, 12], [400, 30]])
    _assert_same_evaluations(stepwise, compiled)
    assert stepwise.last_stats.episode_length_max == 14  # the cut; uncut, an episode ran 40


@pytest.mark.parametrize("jit", [False, True])
def test_a_fixed_schedule_on_a_jax_env_equals_the_same_episode_length(jit):
    """The cut ends and reseeds episodes as brax's own episode limit does."""
    kwargs = dict(env="brax::inverted_pendulum", network=LSTM, num_episodes=2,
                  max_num_envs=SLOTS, seed=3, devices=1, jit=jit)
    scheduled = make_problem(episode_length_schedule=[[0, 9]], episode_length=40, **kwargs)
    fixed = make_problem(episode_length=9, **kwargs)
    params = _population(fixed, 0)
    torch.testing.assert_close(scheduled.evaluate(params, seed=2), fixed.evaluate(params, seed=2))
    assert scheduled.last_stats.num_interactions == fixed.last_stats.num_interactions
    assert scheduled.last_stats.episode_length_max == 9


@pytest.mark.parametrize("network", ["Linear(obs_length, act_length)",
                                     pytest.param(MLP, marks=pytest.mark.slow)])
def test_playground_cartpole_balance_equals_the_step_by_step_path(network):
    stepwise, compiled = _problems("playground::CartpoleBalance", network, 30)
    _assert_same_evaluations(stepwise, compiled, generations=1)


@pytest.mark.slow
def test_lock_step_sub_batches_equal_the_step_by_step_path():
    stepwise, compiled = _problems("brax::inverted_pendulum", MLP, 40, streaming=False)
    _assert_same_evaluations(stepwise, compiled, generations=1)


def test_chunks_and_the_drain_leave_counts_and_returns_as_they_are():
    """Slots stepped in chunks that cost only while busy, the last busy ones finished by the
    drain program: the same episodes as one batch to the end (inverted_pendulum pays 1 per
    step, so returns are lengths), fewer simulated steps."""
    from neurorun.problems.jax.rollout import DRAIN_SLOTS, QUEUE_CHUNK

    slots = 2 * max(QUEUE_CHUNK, DRAIN_SLOTS)  # two chunks, then the drain
    problem = make_problem("brax::inverted_pendulum", MLP, episode_length=60, seed=0,
                           max_num_envs=slots, devices=1)
    params = 2 * torch.randn(3 * slots // 2, problem.solution_length,
                             generator=torch.Generator().manual_seed(0))
    chunked = problem.evaluate(params, seed=4)
    simulated = problem.last_stats.num_simulated_steps
    problem.jax_rollout.one_batch = True
    torch.testing.assert_close(problem.evaluate(params, seed=4), chunked)
    assert problem.last_stats.num_simulated_steps > simulated


def test_action_noise_is_seeded_by_the_problem():
    runs = []
    for _ in range(2):
        problem = make_problem("brax::inverted_pendulum", MLP, episode_length=40, seed=5,
                               action_noise_stdev=0.5)
        params = _population(problem, 0)
        runs.append(torch.stack([problem.evaluate(params) for _ in range(2)]))
    torch.testing.assert_close(runs[0], runs[1])  # same seed, same noise
    assert not torch.equal(runs[0][0], runs[0][1])  # other draws next time


def test_a_torch_module_keeps_the_step_by_step_path_and_says_why(caplog):
    with caplog.at_level(logging.WARNING, logger="neurorun"):
        problem = make_problem("brax::inverted_pendulum",
                               f"{user_policies.__name__}:ResidualPolicy", episode_length=20)
    assert problem.jax_rollout is None
    (record,) = [r for r in caplog.records if "no jax form" in r.getMessage()]
    assert "ResidualPolicy" in record.getMessage() and "step by step" in record.getMessage()
    assert problem.evaluate(_population(problem, 0)).shape == (POPSIZE,)


def _jax_run(*overrides):
    from neurorun.cli.app import compose_config

    return compose_config(["env=brax::inverted_pendulum", "debug=default", "algo.popsize=6",
                           "problem.observation_normalization=true",
                           "logger.console.quiet=true", *overrides])


def _metrics(run_dir):
    import csv

    with open(run_dir / "metrics.csv", newline="") as file:
        return [{k: v for k, v in row.items() if k not in ("elapsed_s", "steps_per_s")}
                for row in csv.DictReader(file)]


@pytest.mark.parametrize("options", [[], ["problem.episode_length_schedule=[[0,8],[200,40]]"]])
def test_a_jax_run_resumes_exactly_and_repeats_with_its_seed(tmp_path, options):
    """Three generations straight, the same again, and two then one more after a resume;
    with a curriculum too (its cut follows the interactions, which the state holds)."""
    from omegaconf import OmegaConf

    from neurorun.config import resume
    from neurorun.loop.runner import run
    from neurorun.record.layout import saved_config_path

    run(_jax_run("generations=3", *options), run_dir=tmp_path / "a")
    run(_jax_run("generations=3", *options), run_dir=tmp_path / "b")
    split = tmp_path / "split"
    cfg = _jax_run("generations=2", *options)
    run(cfg, run_dir=split)
    saved_config_path(split).parent.mkdir(parents=True, exist_ok=True)
    OmegaConf.save(cfg, saved_config_path(split))
    run(resume.load_run_config(split, ["generations=3"]), run_dir=split)
    assert _metrics(tmp_path / "a") == _metrics(tmp_path / "b") == _metrics(split)
    assert len(_metrics(split)) == 3
    if options:  # the first generation's episodes were cut at 8 steps
        assert float(_metrics(split)[0]["episode_length_max"]) == 8


def test_neurorun_eval_of_a_jax_run_reproduces_its_center_evaluation(tmp_path):
    import json

    from neurorun.common.seeding import derive_seed
    from neurorun.loop.runner import run
    from neurorun.tools.evaluate import evaluate

    run(_jax_run("generations=2", "eval_episodes=3"), run_dir=tmp_path)
    best = json.loads((tmp_path / "checkpoints" / "best.json").read_text())
    summary = evaluate(str(tmp_path), episodes=3, seed=derive_seed(0, "evaluation"))
    assert summary["return_mean"] == pytest.approx(best["score"], rel=1e-6)


def test_a_generation_the_device_cannot_hold_is_refused_before_anything_compiles(tmp_path,
                                                                                monkeypatch):
    from neurorun.cli.app import compose_config
    from neurorun.common.errors import ConfigError
    from neurorun.loop.runner import Runner
    from neurorun.problems import memory
    from neurorun.problems.jax.rollout import JaxRollout

    def compile_nothing(*args, **kwargs):
        raise AssertionError("a program was compiled before the memory was checked")

    monkeypatch.setattr(JaxRollout, "__call__", compile_nothing)
    base = ["debug=default", "env=brax::inverted_pendulum", "logger.console.quiet=true"]
    # 100 million env states: far beyond this machine's memory
    with pytest.raises(ConfigError, match=r"algo.popsize=100000000 on 100,000,000 env slots "
                       r"needs about [\d.]+ GB .* Fix: problem.max_num_envs=[\d,]+ "):
        Runner(compose_config([*base, "algo.popsize=100000000"]), run_dir=tmp_path / "big")
    # a device with 20 kB free refuses popsize 64, and names a number of slots that fits
    monkeypatch.setattr(memory, "device_free_bytes", lambda device: 20_000)
    problem = make_problem("brax::inverted_pendulum", episode_length=20)
    with pytest.raises(ValueError, match=r"algo.popsize=64 on 64 env slots") as caught:
        problem.check_capacity(64)
    fits = int(str(caught.value).split("problem.max_num_envs=")[1].split()[0].replace(",", ""))
    assert 1 <= fits < 64
    problem.host.envs.options = dataclasses.replace(problem.env_options, max_num_envs=fits)
    problem.check_capacity(64)  # the suggested number of slots fits
    problem.close()
