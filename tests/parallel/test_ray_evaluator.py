"""RayEvaluator on one local ray instance (2 CPUs) and one toy evaluator (2 actors), both
started once for the module: actor processes take seconds to start on 2 cores.

The toy env (tests/problems/toy_env.py) gives fitness, counts and observations by hand.
Tests that change the shared evaluator's actors (kill, restart limit, close) come last.
"""

import copy
import threading

import numpy as np
import pytest
import ray
import torch

from neurorun.algorithms import make_algorithm
from neurorun.parallel import ActorRestartLimitError, RayEvaluator, RemoteEvaluationError
from neurorun.parallel.workload import mix_seed
from neurorun.problems import make_problem
from tests.parallel.conftest import RAY_RUNTIME_ENV
from tests.parallel.toy_factory import SPEC, toy_fitness

LENGTH = 4
TOY = {"env": SPEC, "seed": 5, "observation_normalization": True, "max_num_envs": 3,
       "env_config": {"length": LENGTH, "step_sleep": 0.005, "raise_seed": 999}}
HALF_CPU = {"num_cpus": 0.5}  # the module's two evaluators share the 2 CPUs


@pytest.fixture(scope="module")
def toy():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR",
             runtime_env=RAY_RUNTIME_ENV)
    evaluator = RayEvaluator(TOY, num_actors=2, max_actor_restarts=5, actor_config=HALF_CPU)
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
    assert toy.last_stats["num_episodes"] == 7
    # the merged deltas equal one process seeing every observation [t, seed], t < length
    t, s = np.concatenate([np.arange(n) for n in lengths]), np.repeat(seeds, lengths)
    delta = toy.obs_stats - stats_before
    assert float(delta.count) == lengths.sum()
    np.testing.assert_allclose(delta.sum.numpy(), [t.sum(), s.sum()])
    np.testing.assert_allclose(delta.sum_of_squares.numpy(), [(t**2).sum(), (s**2).sum()])
    toy.num_subbatches = toy.subbatch_size = None


def test_distributed_step_equals_averaged_share_gradients_by_hand(toy):
    algo = make_algorithm("pgpe", solution_length=3, popsize=10, seed=0,
                          center_learning_rate=0.2, stdev_learning_rate=0.1, stdev_init=0.5,
                          optimizer="clipup", optimizer_config={"max_speed": 0.4})
    expected = copy.deepcopy(algo)
    draw = int(torch.randint(2**62, (1,), generator=copy.deepcopy(algo.generator)))
    norm = (toy.obs_stats.mean.numpy(), toy.obs_stats.stdev.numpy())  # frozen for the step
    fitness = toy.distributed_step(algo, seed=50)
    assert toy.last_stats["num_episodes"] == 10
    grads, all_fitness, offset = [], [], 0
    for index, size in enumerate([6, 4]):  # 5 mirrored pairs over 2 actors
        generator = torch.Generator().manual_seed(mix_seed(draw, index))
        samples = expected.distribution.sample(size, generator)
        seeds = 50 + offset + np.arange(size)
        f = toy_fitness(samples.numpy().astype(np.float64), seeds, LENGTH, *norm)
        all_fitness.append(f)
        grads.append((size, expected.compute_gradients(samples, torch.tensor(f))))
        offset += size
    np.testing.assert_allclose(fitness.numpy(), np.concatenate(all_fitness), rtol=1e-5)
    expected.apply_gradients({k: sum(n * g[k] for n, g in grads) / 10 for k in grads[0][1]})
    np.testing.assert_allclose(algo.center.numpy(), expected.center.numpy(), rtol=1e-5)
    np.testing.assert_allclose(algo.stdev.numpy(), expected.stdev.numpy(), rtol=1e-5)
    assert algo.generation == 1


def test_distributed_step_refuses_cmaes(toy):
    algo = make_algorithm("cmaes", solution_length=3, popsize=6, seed=0, stdev_init=1.0)
    with pytest.raises(ValueError, match="cmaes.*evolution paths"):
        toy.distributed_step(algo)


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
        np.testing.assert_array_equal(evaluator.run_test_episodes(solution, 2, 7).numpy(),
                                      local.run_test_episodes(solution, 2, 7).numpy())
    local.close()
    assert ray.is_initialized()  # a ray the evaluator did not start stays up


RUNNER_COMMON = ["debug=default", "logger.console.quiet=true", "generations=3",
                 "problem.vectorization=sync", "target_score=null",
                 "problem.observation_normalization=false"]
RAY_OPTIONS = ["parallel=ray", "parallel.num_actors=2", "+parallel.actor_config.num_cpus=0.5"]


def test_runner_with_ray_equals_the_local_run(tmp_path):
    """The whole command path: `parallel=ray` gives the local run's metrics, generation by
    generation (sync vectorization: each solution's episodes seeded by its index)."""
    from neurorun.cli import compose_config
    from neurorun.runner import run

    local = run(compose_config(RUNNER_COMMON), run_dir=tmp_path / "local")
    remote = run(compose_config(RUNNER_COMMON + RAY_OPTIONS), run_dir=tmp_path / "ray")
    assert remote["generation"] == 3
    for key in ("mean_eval", "pop_best_eval", "center_eval", "total_interaction_count"):
        assert remote[key] == local[key], key
    assert remote["total_episode_count"] == 3 * 10  # popsize 10, one episode each


def test_runner_in_distributed_mode_equals_the_shares_replayed_here(tmp_path):
    """`algo.distributed=true` from the command path: three generations replayed in this
    process (each share sampled from its seed, evaluated on a local problem, the gradients
    averaged by share size) end at the center and stdev the run checkpointed."""
    from neurorun.build import build_parts
    from neurorun.cli import compose_config
    from neurorun.parallel.distributed import plan_shares
    from neurorun.runner import run

    result = run(compose_config(RUNNER_COMMON + RAY_OPTIONS + ["algo.distributed=true"]),
                 run_dir=tmp_path / "ray")
    assert result["total_episode_count"] == 3 * 10
    problem, algo = build_parts(compose_config(RUNNER_COMMON))
    start = algo.center.clone()
    for _ in range(3):
        shares = plan_shares(algo, algo.popsize, 2, problem.draw_seed())
        assert [share["size"] for share in shares] == [6, 4]  # 5 mirrored pairs on 2 actors
        total, sizes_and_grads = 0, []
        for share in shares:
            generator = torch.Generator().manual_seed(share["sample_seed"])
            samples = algo.distribution.sample(share["size"], generator)
            fitness = problem.evaluate(samples, seed=share["env_seed"])
            sizes_and_grads.append((share["size"], algo.compute_gradients(samples, fitness)))
            total += share["size"]
        algo.apply_gradients({key: sum(n * g[key] for n, g in sizes_and_grads) / total
                              for key in sizes_and_grads[0][1]})
    problem.close()
    saved = torch.load(tmp_path / "ray" / "checkpoints" / "last.pt", weights_only=True)
    torch.testing.assert_close(saved["solution"], algo.center.float(), rtol=1e-5, atol=1e-6)
    assert not torch.allclose(saved["solution"], start.float())  # it moved


def _kill_soon(actor, delay: float) -> threading.Timer:
    timer = threading.Timer(delay, lambda: ray.kill(actor, no_restart=True))
    timer.start()
    return timer


def test_killed_actor_sub_batch_reruns_on_a_replacement(toy):
    toy.subbatch_size = 1  # 12 jobs of ~6 steps x 5 ms: the kill lands mid-generation
    params, seeds = _biases(12), 30 + np.arange(12)
    count, restarts = toy.interaction_count, toy.pool.restarts
    killer = _kill_soon(toy.pool.actors[0], 0.1)
    fitness = toy.evaluate(params, seed=30)
    killer.join()
    toy.subbatch_size = None
    assert toy.pool.restarts == restarts + 1
    np.testing.assert_allclose(fitness.numpy(), toy_fitness(params.numpy(), seeds, LENGTH),
                               rtol=1e-6)
    assert toy.interaction_count - count == _lengths(seeds).sum()  # nothing counted twice
    assert toy.last_stats["num_episodes"] == 12


def test_restart_limit_stops_with_a_clear_error(toy):
    toy.pool.max_restarts = toy.pool.restarts
    toy.subbatch_size = 1
    killer = _kill_soon(toy.pool.actors[1], 0.1)
    with pytest.raises(ActorRestartLimitError, match="max_actor_restarts"):
        toy.evaluate(_biases(12), seed=0)
    killer.join()


def test_close_ends_actors_and_refuses_work(toy):
    actors = list(toy.pool.actors)
    toy.close()
    assert ray.is_initialized()  # started by the fixture, not by the evaluator
    with pytest.raises(ray.exceptions.RayActorError):
        ray.get(actors[0].pid.remote(), timeout=30)
    with pytest.raises(RuntimeError, match="closed"):
        toy.evaluate(_biases(2))
