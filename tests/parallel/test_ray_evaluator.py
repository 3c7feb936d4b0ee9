"""RayEvaluator on one local ray instance (2 CPUs) and one toy evaluator (2 actors), both
started once for the module: actor processes take seconds to start on 2 cores.

The toy env (tests/problems/toy_env.py) gives fitness, counts and observations by hand.
Tests that change the shared evaluator's actors (kill, restart limit, close) come last.
"""

import copy
import csv
import json
import re

import numpy as np
import pytest
import ray
import torch

from neurorun.algorithms import make_algorithm
from neurorun.parallel import ActorRestartLimitError, RayEvaluator, RemoteEvaluationError
from neurorun.problems import make_problem
from tests.parallel.conftest import RAY_RUNTIME_ENV
from tests.parallel.toy_factory import SPEC, toy_fitness

pytestmark = pytest.mark.extras("ray")

LENGTH = 4
TOY = {"env": SPEC, "seed": 5, "observation_normalization": True, "max_num_envs": 3,
       "env_config": {"length": LENGTH, "step_sleep": 0.005, "raise_seed": 999}}
HALF_CPU = {"num_cpus": 0.5}  # the module's two evaluators share the 2 CPUs


@pytest.fixture(scope="module")
def die_file(tmp_path_factory):
    """A path the toy's envs look for at every step: the first to find it ends its actor."""
    return tmp_path_factory.mktemp("toy") / "die"


@pytest.fixture(scope="module")
def toy(die_file):
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR",
             runtime_env=RAY_RUNTIME_ENV)
    options = {**TOY, "env_config": {**TOY["env_config"], "die_file": str(die_file)}}
    evaluator = RayEvaluator(options, num_actors=2, max_actor_restarts=5, actor_config=HALF_CPU)
    yield evaluator
    evaluator.close()
    ray.shutdown()


def _biases(n: int) -> torch.Tensor:
    """Policies [0, 0, b]: action b everywhere, reward 1 + b per step."""
    params = torch.zeros(n, 3)
    params[:, 2] = torch.linspace(-0.9, 0.9, n)
    return params


def _lengths(seeds: np.ndarray) -> np.ndarray:
    return LENGTH + seeds % 3


@pytest.mark.parametrize("options", [(None, None), (None, 2), (3, None), (None, 1)])
def test_toy_fitness_counters_and_obs_stats_by_hand(toy, options):
    toy.num_subbatches, toy.subbatch_size = options
    params, seeds = _biases(7), 100 + np.arange(7)
    count, stats_before = toy.interaction_count, toy.obs_stats.copy()
    fitness = toy.evaluate(params, seed=100)
    np.testing.assert_allclose(fitness.numpy(), toy_fitness(params.numpy(), seeds, LENGTH),
                               rtol=1e-6)
    lengths = _lengths(seeds)
    assert toy.interaction_count - count == lengths.sum()  # every solution counted once
    assert toy.last_stats.num_episodes == 7
    # the merged deltas equal one process seeing every observation [t, seed], t < length
    t, s = np.concatenate([np.arange(n) for n in lengths]), np.repeat(seeds, lengths)
    delta = toy.obs_stats - stats_before
    assert float(delta.count) == lengths.sum()
    np.testing.assert_allclose(delta.sum.numpy(), [t.sum(), s.sum()])
    np.testing.assert_allclose(delta.sum_of_squares.numpy(), [(t**2).sum(), (s**2).sum()])
    toy.num_subbatches = toy.subbatch_size = None


ALGORITHM_OPTIONS = {  # one generation of each, on the toy's 3 parameters
    "pgpe": {"center_learning_rate": 0.2, "stdev_learning_rate": 0.1, "stdev_init": 0.5},
    "openai_es": {"center_learning_rate": 0.2, "stdev_init": 0.5},
    "ars": {"step_size": 0.2, "noise": 0.5},
    "cem": {"parenthood_ratio": 0.4, "stdev_init": 0.5},
    "snes": {"stdev_init": 0.5},
    "xnes": {"stdev_init": 0.5},
    "sep_cmaes": {"stdev_init": 0.5},
}


def _local_generation(toy, algo, base: int, rounds: int = 1) -> np.ndarray:
    """What a local run does: ask popsize samples per round, evaluate them by hand on the toy
    (envs seeded base_r + j, obs normalized with the round's frozen statistics), tell."""
    fitness, norm = [], (toy.obs_stats.mean.numpy(), toy.obs_stats.stdev.numpy())
    for round_ in range(rounds):
        samples = algo.ask().numpy().astype(np.float64)
        seeds = base + round_ + np.arange(len(samples))  # each round draws base + round
        fitness.append(toy_fitness(samples, seeds, LENGTH, *norm))
    algo.tell(torch.tensor(np.concatenate(fitness)))
    return np.concatenate(fitness)


@pytest.mark.parametrize("name", sorted(ALGORITHM_OPTIONS))
@pytest.mark.parametrize("shares", [1, 2, 3])
def test_distributed_step_equals_the_local_update(toy, name, shares, monkeypatch):
    """Actors regenerate their shares, the main process weighs the whole generation, actors
    send weighted noise sums: the local run's samples, fitness and update, split 1-3 ways."""
    algo = make_algorithm(name, solution_length=3, popsize=10, seed=0, **ALGORITHM_OPTIONS[name])
    local = copy.deepcopy(algo)
    draws = iter(range(500, 600))
    monkeypatch.setattr(toy, "draw_seed", lambda: next(draws))
    toy.num_subbatches = shares
    stats_before = toy.obs_stats.copy()
    fitness = toy.distributed_step(algo)
    toy.num_subbatches = None
    toy.problem.obs_stats.load_state_dict(stats_before.state_dict())  # the local side's stats
    expected = _local_generation(toy, local, 500)
    np.testing.assert_allclose(fitness.numpy(), expected, rtol=1e-5)
    torch.testing.assert_close(algo.center, local.center, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(algo.stdev, local.stdev, rtol=1e-5, atol=1e-6)
    assert algo.generation == local.generation == 1
    assert toy.last_stats.num_episodes == 10


def test_adaptive_popsize_rounds_equal_the_local_run(toy, monkeypatch):
    algo = make_algorithm("pgpe", solution_length=3, popsize=4, seed=1, num_interactions=45,
                          **ALGORITHM_OPTIONS["pgpe"])
    local = copy.deepcopy(algo)
    draws = iter(range(700, 800))
    monkeypatch.setattr(toy, "draw_seed", lambda: next(draws))
    stats_before = toy.obs_stats.copy()
    fitness = toy.distributed_step(algo)
    assert len(fitness) == 12  # rounds of 4 episodes make 20, 41, then 60 >= 45 interactions
    toy.problem.obs_stats.load_state_dict(stats_before.state_dict())
    norm_rounds = []  # the local runner re-reads the stats before each round: same here
    fitness_local, seeds_base = [], 700
    for round_ in range(3):
        norm_rounds.append((toy.obs_stats.mean.numpy(), toy.obs_stats.stdev.numpy()))
        samples = local.ask().numpy().astype(np.float64)
        seeds = seeds_base + round_ + np.arange(4)
        fitness_local.append(toy_fitness(samples, seeds, LENGTH, *norm_rounds[-1]))
        lengths = _lengths(seeds)
        t = np.concatenate([np.arange(n) for n in lengths])
        toy.problem.obs_stats.update(torch.tensor(np.stack(
            [t, np.repeat(seeds, lengths)], axis=1), dtype=torch.float64))
    local.tell(torch.tensor(np.concatenate(fitness_local)))
    np.testing.assert_allclose(fitness.numpy(), np.concatenate(fitness_local), rtol=1e-5)
    torch.testing.assert_close(algo.center, local.center, rtol=1e-5, atol=1e-6)


def test_bytes_of_a_distributed_generation_follow_the_formula(toy, monkeypatch):
    """Sent: the sampling state (mu, sigma: 2 D floats) and the obs statistics once, 48 bytes
    per share, a weight per sample; received: a fitness per sample, each share's obs delta,
    and two D-vectors of sums per actor."""
    algo = make_algorithm("pgpe", solution_length=3, popsize=10, seed=2,
                          **ALGORITHM_OPTIONS["pgpe"])
    toy.distributed_step(algo)  # the first step also ships the replica
    toy.distributed_step(algo)
    transfer, dim, pop = toy.last_transfer, 3, 10
    obs_state = 8 + 2 * 2 * 8  # count, sum and sum of squares (float64, observations of 2)
    shares = len(toy.pool.last_slots)
    assert transfer["bytes_sent"] == 2 * dim * 4 + obs_state + 48 * 2 + pop * 4
    actors = len(set(toy.pool.last_slots))
    assert transfer["bytes_received"] == pop * 4 + 2 * obs_state + actors * 2 * dim * 4
    assert shares == actors == 2


def test_distributed_step_refuses_full_cmaes(toy):
    algo = make_algorithm("cmaes", solution_length=3, popsize=6, seed=0, stdev_init=1.0)
    with pytest.raises(ValueError, match="cmaes.*Fix: algo=sep_cmaes"):
        toy.distributed_step(algo)


@pytest.mark.parametrize(("key", "value"), [("num_cpus", "abc"), ("num_cpus", -1),
                                            ("num_gpus", True), ("num_gpus", float("inf"))])
def test_actor_resources_that_are_not_counts_are_refused_naming_the_key(toy, key, value):
    """`parallel.actor_config.num_cpus=abc` was "could not convert string to
    float: 'abc'", naming neither the key nor the fix."""
    with pytest.raises(ValueError, match=rf"^parallel\.actor_config\.{key}={value!r}; "
                                         r"expected a number >= 0 .*Fix: e\.g\. "):
        RayEvaluator(TOY, num_actors=1, actor_config={key: value})


def test_failing_env_surfaces_with_the_actor_traceback(toy):
    with pytest.raises(RemoteEvaluationError,
                       match="(?s)toy_factory.py.*RuntimeError: toy simulator exploded"):
        toy.evaluate(_biases(2), seed=999)


def test_cartpole_equals_local_evaluator_over_generations():
    kwargs = {"env": "CartPole-v1", "network": "Linear(obs_length, 4) >> Tanh() >> "
              "Linear(4, act_length)", "observation_normalization": True, "seed": 1,
              "vectorization": "sync", "max_num_envs": 4}
    local = make_problem(**kwargs)
    population = torch.randn(3, 9, local.solution_length,
                             generator=torch.Generator().manual_seed(0))
    with RayEvaluator(kwargs, num_actors=2, subbatch_size=3, actor_config=HALF_CPU) as evaluator:
        for params in population:  # no explicit seed: both draw from the same generator
            np.testing.assert_array_equal(evaluator.evaluate(params).numpy(),
                                          local.evaluate(params).numpy())
        assert evaluator.interaction_count == local.interaction_count
        np.testing.assert_allclose(evaluator.obs_stats.sum.numpy(), local.obs_stats.sum.numpy())
        assert evaluator.state_dict()["interaction_count"] == local.interaction_count
        solution = population[0, 0]
        np.testing.assert_array_equal(evaluator.test_episodes(solution, 2, 7)[0].numpy(),
                                      local.test_episodes(solution, 2, 7)[0].numpy())
    local.close()
    assert ray.is_initialized()  # a ray the evaluator did not start stays up


RUNNER_COMMON = ["debug=default", "logger.console.quiet=true", "generations=3",
                 "problem.vectorization=sync", "target_score=null",
                 "problem.observation_normalization=false"]
# CartPole's first episodes last about 10 steps: cut to 5, then longer as interactions grow
CURRICULUM = "problem.episode_length_schedule=[[0,5],[150,30]]"


def _first_row(run_dir):
    with open(run_dir / "metrics.csv", newline="") as file:
        return next(csv.DictReader(file))


RAY_OPTIONS = ["parallel=ray", "parallel.num_actors=2", "+parallel.actor_config.num_cpus=0.5"]


@pytest.mark.parametrize("extra", [[], [CURRICULUM]])
def test_runner_with_ray_equals_the_local_run(tmp_path, extra):
    """The whole command path: `parallel=ray` gives the local run's metrics, generation by
    generation (sync vectorization: each solution's episodes seeded by its index); with a
    curriculum, whose cut the main process sends."""
    from neurorun.cli.app import compose_config
    from neurorun.loop.runner import run

    local = run(compose_config(RUNNER_COMMON + extra), run_dir=tmp_path / "local")
    remote = run(compose_config(RUNNER_COMMON + extra + RAY_OPTIONS +
                                ["algo.distributed=false"]), run_dir=tmp_path / "ray")
    assert remote["generation"] == 3
    for key in ("mean_eval", "pop_best_eval", "center_eval", "total_interaction_count"):
        assert remote[key] == local[key], key
    assert remote["total_episode_count"] == 3 * 10  # popsize 10, one episode each
    if extra:  # the first generation's episodes were cut at 5 steps
        assert _first_row(tmp_path / "ray")["episode_length_max"] == "5.0"


@pytest.mark.parametrize(("algo", "mode", "extra"), [
    ("pgpe", "auto", []), ("ars", "true", []),
    # rounds of an adaptive popsize until 80 interactions: each round's cut counts the last's
    ("pgpe", "auto", [CURRICULUM, "algo.num_interactions=80", "algo.popsize_max=40"])])
def test_runner_in_distributed_mode_equals_the_local_run(tmp_path, algo, mode, extra):
    """Distributed mode from the command path (`auto`, the default, picks it on ray): the
    local run's metrics, generation by generation (sync vectorization: each solution's
    episodes seeded by its index); with a curriculum too."""
    from neurorun.cli.app import compose_config
    from neurorun.loop.runner import run

    choice = ([] if algo == "pgpe" else ["algo=ars", "algo.popsize=10"]) + extra
    local = run(compose_config(RUNNER_COMMON + choice), run_dir=tmp_path / "local")
    remote = run(compose_config(RUNNER_COMMON + choice + RAY_OPTIONS +
                                [f"algo.distributed={mode}"]), run_dir=tmp_path / "ray")
    for key in ("mean_eval", "pop_best_eval", "center_eval", "total_interaction_count"):
        assert remote[key] == pytest.approx(local[key], rel=1e-5), key
    saved = [torch.load(tmp_path / side / "checkpoints" / "last.pt", weights_only=True)
             for side in ("local", "ray")]
    torch.testing.assert_close(saved[1]["solution"], saved[0]["solution"], rtol=1e-5,
                               atol=1e-6)
    if extra:  # rounds of 10 until 80 interactions: the cut grew between them
        assert int(_first_row(tmp_path / "ray")["popsize"]) > 10


def test_two_actors_on_one_device_each_equal_one_process_on_two_devices(tmp_path):
    """brax's compiled evaluation: the update of 2 ray actors (one host device each, the
    distributed protocol) equals one process's sharded over 2 devices: each pair's episode
    is its own, wherever it runs."""
    from neurorun.cli.app import compose_config
    from neurorun.loop.runner import run

    common = ["debug=default", "env=brax::inverted_pendulum", "logger.console.quiet=true",
              "generations=2", "algo.popsize=8", "problem.episode_length=30",
              "target_score=null", "eval_episodes=2"]
    local = run(compose_config(common + ["problem.devices=2"]), run_dir=tmp_path / "local")
    remote = run(compose_config(common + RAY_OPTIONS + ["algo.distributed=true"]),
                 run_dir=tmp_path / "ray")
    for key in ("mean_eval", "pop_best_eval", "center_eval", "total_interaction_count"):
        assert remote[key] == pytest.approx(local[key], rel=1e-5), key
    saved = [torch.load(tmp_path / side / "checkpoints" / "last.pt", weights_only=True)
             for side in ("local", "ray")]
    torch.testing.assert_close(saved[1]["solution"], saved[0]["solution"], rtol=1e-5,
                               atol=1e-6)


def test_an_actor_dying_in_a_distributed_step_is_replaced_and_the_update_is_the_same(
        toy, die_file, monkeypatch):
    algo = make_algorithm("snes", solution_length=3, popsize=12, seed=4,
                          **ALGORITHM_OPTIONS["snes"])
    local = copy.deepcopy(algo)
    draws = iter(range(900, 1000))
    monkeypatch.setattr(toy, "draw_seed", lambda: next(draws))
    toy.num_subbatches = 12
    restarts = toy.pool.restarts
    stats_before = toy.obs_stats.copy()
    die_file.touch()  # the first env step of the generation ends its actor
    toy.distributed_step(algo)
    toy.num_subbatches = None
    assert toy.pool.restarts == restarts + 1
    toy.problem.obs_stats.load_state_dict(stats_before.state_dict())
    _local_generation(toy, local, 900)
    torch.testing.assert_close(algo.center, local.center, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(algo.stdev, local.stdev, rtol=1e-5, atol=1e-6)


def test_a_dead_actors_sub_batch_reruns_on_a_replacement(toy, die_file, caplog):
    toy.subbatch_size = 1
    params, seeds = _biases(12), 30 + np.arange(12)
    count, restarts = toy.interaction_count, toy.pool.restarts
    die_file.touch()  # the first env step of the evaluation ends its actor, mid-job
    fitness = toy.evaluate(params, seed=30)
    toy.subbatch_size = None
    assert toy.pool.restarts == restarts + 1
    np.testing.assert_allclose(fitness.numpy(), toy_fitness(params.numpy(), seeds, LENGTH),
                               rtol=1e-6)
    assert toy.interaction_count - count == _lengths(seeds).sum()  # nothing counted twice
    assert toy.last_stats.num_episodes == 12
    # neurorun's own line says what happened (ray's go to the run's log)
    assert re.search(r"actor \d \(pid \d+\) died; its job runs again", caplog.text)


def test_restart_limit_stops_with_a_clear_error(toy, die_file):
    toy.pool.max_restarts = toy.pool.restarts
    toy.subbatch_size = 1
    die_file.touch()
    with pytest.raises(ActorRestartLimitError, match="max_actor_restarts"):
        toy.evaluate(_biases(12), seed=0)


def test_close_ends_actors_and_refuses_work(toy):
    actors = list(toy.pool.actors)
    toy.close()
    assert ray.is_initialized()  # started by the fixture, not by the evaluator
    with pytest.raises(ray.exceptions.RayActorError):
        ray.get(actors[0].pid.remote(), timeout=30)
    with pytest.raises(RuntimeError, match="closed"):
        toy.evaluate(_biases(2))


def test_a_distributed_run_resumes_exactly(tmp_path):
    """2 + 2 generations in distributed mode equal 4 (metrics and the last center)."""
    from omegaconf import OmegaConf

    from neurorun.cli.app import compose_config
    from neurorun.config import resume
    from neurorun.loop.runner import run
    from neurorun.record import layout

    common = [*RUNNER_COMMON, *RAY_OPTIONS, "algo=ars", "algo.popsize=10",
              "algo.distributed=true"]
    whole, split = tmp_path / "whole", tmp_path / "split"
    run(compose_config([*common, "generations=4"]), run_dir=whole)
    cfg = compose_config([*common, "generations=2"])
    run(cfg, run_dir=split)
    OmegaConf.save(cfg, layout.saved_config_path(split))  # what Hydra does for the command
    resumed = run(resume.load_run_config(split, ["generations=4"]), run_dir=split)
    assert resumed["generation"] == 4

    def rows(folder):
        lines = (folder / "metrics.jsonl").read_text().splitlines()
        return [{k: v for k, v in json.loads(line).items() if k not in ("elapsed_s",
                                                                       "steps_per_s")}
                for line in lines]

    assert rows(split) == rows(whole)
    saved = [torch.load(folder / "checkpoints" / "last.pt", weights_only=True)["solution"]
             for folder in (whole, split)]
    assert torch.equal(saved[0], saved[1])
