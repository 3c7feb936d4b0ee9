"""Evaluator semantics on the toy env, whose returns and lengths are known by hand."""

import dataclasses
import functools
import warnings

import numpy as np
import pytest
import torch

from neurorun.envs.base import UnknownEnvError
from neurorun.problems import (
    EnvOptions,
    EvaluationError,
    Evaluator,
    Problem,
    RolloutOptions,
    make_problem,
)

from . import toy_env
from .toy_env import TOY_ID, episode_lengths, episode_seed, toy_lengths

SEED = 10


def toy_problem(**options):
    config = options.pop("env_config", {})
    return make_problem(TOY_ID, "Linear(obs_length, act_length)", vectorization="sync",
                        env_config={"length": 4, **config}, seed=0, **options)


def bias_params(biases):
    """Linear(2, 1) parameters [w0, w1, b]: zero weights, so every action equals b."""
    return torch.tensor([[0.0, 0.0, b] for b in biases])


BIASES = [-0.5, 0.0, 0.5, 2.0]  # 2.0 is clipped to the action bound 1.0


def per_step_reward(b):
    return 1.0 + min(max(b, -1.0), 1.0)


def test_exact_fitness_one_episode():
    problem = toy_problem()
    fitness = problem.evaluate(bias_params(BIASES), seed=SEED)
    expected = [per_step_reward(b) * episode_lengths(SEED, j, 4, 1)[0]
                for j, b in enumerate(BIASES)]
    np.testing.assert_allclose(fitness.numpy(), expected)


def test_a_problem_is_the_runners_evaluator():
    problem = toy_problem()
    assert isinstance(problem, Evaluator)  # every member the runner uses is there
    assert problem.solution_length == 3  # Linear(2, 1): two weights and a bias
    problem.close()
    problem.close()  # closing twice does nothing


@pytest.mark.parametrize("max_num_envs", [None, 1, 3])
def test_num_episodes_mean_and_counts(max_num_envs):
    problem = toy_problem(num_episodes=3, max_num_envs=max_num_envs)
    fitness = problem.evaluate(bias_params(BIASES), seed=SEED)
    lengths = [episode_lengths(SEED, j, 4, 3) for j in range(len(BIASES))]
    expected = [per_step_reward(b) * sum(ls) / 3 for b, ls in zip(BIASES, lengths, strict=True)]
    np.testing.assert_allclose(fitness.numpy(), expected)
    # the autoreset step between episodes is not an interaction
    assert problem.interaction_count == sum(map(sum, lengths))
    assert problem.episode_count == 3 * len(BIASES)
    stats = problem.last_stats
    flat = [ls[k] for ls in lengths for k in range(3)]
    assert stats.episode_length_min == min(flat)
    assert stats.episode_length_max == max(flat)
    assert stats.num_interactions == sum(flat) and stats.num_episodes == 12
    returns = [per_step_reward(b) * n for b, ls in zip(BIASES, lengths, strict=True) for n in ls]
    assert stats.episode_return_mean == pytest.approx(np.mean(returns))
    assert stats.episode_return_max == pytest.approx(max(returns))


def test_episode_length_truncates():
    problem = toy_problem(num_episodes=2, episode_length=5)
    fitness = problem.evaluate(bias_params([0.0, 0.0, 0.0]), seed=SEED)
    lengths = [[min(n, 5) for n in episode_lengths(SEED, j, 4, 2)] for j in range(3)]
    np.testing.assert_allclose(fitness.numpy(), [sum(ls) / 2 for ls in lengths])
    assert problem.interaction_count == sum(map(sum, lengths))


def test_an_episode_length_schedule_cuts_training_episodes_by_the_steps_so_far():
    """[[0, 3], [30, 6]]: the toy's episodes of 4-6 steps are cut to 3 + 3 * count // 30
    steps after ``count`` interactions: 3, then 4 (12 interactions), then 5 (28)."""
    problem = toy_problem(num_episodes=2, max_num_envs=2, observation_normalization=True,
                          episode_length_schedule=[[0, 3], [30, 6]])
    params = bias_params([0.5, 0.0])
    count = 0
    for cut in (3, 4, 5):
        assert cut == 3 + (6 - 3) * count // 30  # the schedule, by hand
        fitness = problem.evaluate(params, seed=SEED)
        lengths = [[min(n, cut) for n in episode_lengths(SEED, j, 4, 2)] for j in range(2)]
        np.testing.assert_allclose(fitness.numpy(), [
            per_step_reward(b) * sum(ls) / 2
            for b, ls in zip([0.5, 0.0], lengths, strict=True)])
        count += sum(map(sum, lengths))
        assert problem.interaction_count == count
        assert problem.last_stats.num_episodes == 4
        assert problem.last_stats.episode_length_max == cut
    assert float(problem.obs_stats.count) == count  # no observation after a cut was acted on
    # test episodes are never cut: 4 + seed % 3 steps
    _, test_lengths = problem.test_episodes(params[0], 2, seed=SEED)
    assert test_lengths.tolist() == [4 + (SEED + k) % 3 for k in range(2)]


@pytest.mark.parametrize("env", [
    TOY_ID, pytest.param("envpool::Pendulum-v1", marks=pytest.mark.extras("envpool"))])
def test_a_fixed_schedule_equals_the_same_episode_length(env):
    """A cut made by the schedule ends, counts and seeds episodes as ``episode_length`` does
    (the env's own time limit), on the sub-env stepper and on EnvPool's pool."""
    options = dict(num_episodes=3, max_num_envs=2, observation_normalization=True)
    if env == TOY_ID:
        options["env_config"] = {"length": 6}
    build = toy_problem if env == TOY_ID else functools.partial(make_problem, env, seed=0)
    scheduled = build(episode_length_schedule=[[0, 5]], **options)
    fixed = build(episode_length=5, **options)
    params = torch.randn(3, scheduled.solution_length, generator=torch.Generator().manual_seed(0))
    for _ in range(2):
        torch.testing.assert_close(scheduled.evaluate(params, seed=SEED),
                                   fixed.evaluate(params, seed=SEED))
        assert scheduled.last_stats == dataclasses.replace(
            fixed.last_stats, eval_time_s=scheduled.last_stats.eval_time_s)
    assert scheduled.last_stats.episode_length_max == 5
    torch.testing.assert_close(scheduled.obs_stats.mean, fixed.obs_stats.mean)


def test_an_episode_length_schedule_is_refused_where_envs_cannot_end_one_episode():
    with pytest.raises(ValueError, match=r"problem.vectorization=async with problem.episode_"
                                         r"length_schedule: .* cannot end single episodes.* Fix: "
                                         r"problem.vectorization=sync"):
        make_problem(TOY_ID, vectorization="async", episode_length_schedule=[[0, 3]])
    with pytest.raises(ValueError, match=r"^vectorization='bogus': expected one of auto, "
                                         r"native, sync, async\."):  # named, not "cannot end"
        make_problem(TOY_ID, vectorization="bogus", episode_length_schedule=[[0, 3]])
    options = EnvOptions(spec=TOY_ID, vectorization="async")  # the Problem, built directly
    problem = Problem(options, "Linear(obs_length, act_length)",
                      RolloutOptions.parse(1, 0.0, None, None, [[0, 3]]))
    with pytest.raises(ValueError, match=r"episode_length_schedule: the envs of .* cannot end "
                                         r"single episodes. Fix: problem.vectorization=sync"):
        problem.evaluate(torch.zeros(1, problem.solution_length), seed=SEED)
    problem.close()


def test_a_schedule_on_an_env_with_a_native_vector_env_steps_it_sync():
    """vectorization=auto picks gymnasium's own CartPole vector env, which ends every episode
    together; with a schedule it picks the sync one, and cuts as a fixed episode_length."""
    scheduled = make_problem("CartPole-v1", episode_length_schedule=[[0, 5]], seed=0)
    params = torch.randn(4, scheduled.solution_length,
                         generator=torch.Generator().manual_seed(0)) * 0.01
    fixed = make_problem("CartPole-v1", episode_length=5, vectorization="sync", seed=0)
    assert scheduled.env_options.vectorization == "sync"
    torch.testing.assert_close(scheduled.evaluate(params, seed=SEED),
                               fixed.evaluate(params, seed=SEED))
    assert scheduled.interaction_count == 4 * 5  # no CartPole falls within 5 steps
    assert scheduled.last_stats.episode_length_max == 5


def bonus_total(length, t0, t1, bonus):
    total = 0.0
    for t in range(1, length + 1):
        if t >= t1:
            total += bonus
        elif t >= t0:
            total += bonus * (t - t0) / (t1 - t0)
    return total


@pytest.mark.parametrize("schedule, t0, t1", [((2, 10.0), 2, 2), ((1, 3, 6.0), 1, 3)])
def test_alive_bonus_and_decrease_rewards_by(schedule, t0, t1):
    problem = toy_problem(num_episodes=2, alive_bonus_schedule=schedule,
                          decrease_rewards_by=0.25)
    fitness = problem.evaluate(bias_params([0.5, 0.0]), seed=SEED)
    expected = []
    for j, b in enumerate([0.5, 0.0]):
        episodes = episode_lengths(SEED, j, 4, 2)
        total = sum(n * (per_step_reward(b) - 0.25) + bonus_total(n, t0, t1, schedule[-1])
                    for n in episodes)
        expected.append(total / 2)
    np.testing.assert_allclose(fitness.numpy(), expected)
    # reported returns are the env's own, unshaped
    assert problem.last_stats.episode_return_min == pytest.approx(
        min(per_step_reward(0.0) * n for n in episode_lengths(SEED, 1, 4, 2)))


def test_obs_stats_cover_exactly_the_observations_acted_on():
    problem = toy_problem(num_episodes=2, observation_normalization=True)
    problem.evaluate(bias_params([0.0, 0.0, 0.0]), seed=SEED)
    # first and non-terminal observations [t, seed] of every episode; no terminal ones
    seen = [[t, episode_seed(SEED, j, e)] for j in range(3)
            for e, n in enumerate(episode_lengths(SEED, j, 4, 2)) for t in range(n)]
    seen = np.array(seen, dtype=np.float64)
    stats = problem.obs_stats
    assert float(stats.count) == len(seen) == problem.interaction_count
    np.testing.assert_allclose(stats.mean.numpy(), seen.mean(0))
    np.testing.assert_allclose(stats.stdev.numpy(), np.sqrt(np.maximum(seen.var(0), 1e-2)))


def test_normalization_uses_stats_from_before_the_call():
    problem = toy_problem(observation_normalization=True)
    problem.evaluate(bias_params([0.0, 0.0]), seed=SEED)
    mean, stdev = problem.obs_stats.mean.numpy(), problem.obs_stats.stdev.numpy()
    w = np.array([0.3, -0.2])
    fitness = problem.evaluate(torch.tensor([[0.3, -0.2, 0.1]]), seed=SEED)
    n = toy_lengths(SEED, 4, 1)[0]
    actions = [np.clip(w @ ((np.array([t, SEED]) - mean) / stdev) + 0.1, -1, 1) for t in range(n)]
    assert float(fitness[0]) == pytest.approx(sum(1 + a for a in actions), rel=1e-5)


def test_nonfinite_reward_gets_worst_fitness_and_is_counted():
    problem = toy_problem(env_config={"nan_reward_seed": SEED + 1})
    fitness = problem.evaluate(bias_params([0.5, 0.0, 0.0, -0.5]), seed=SEED)
    good = [per_step_reward(b) * episode_lengths(SEED, j, 4, 1)[0]
            for j, b in [(0, 0.5), (2, 0.0), (3, -0.5)]]
    worst = min(good) - max(1.0, max(good) - min(good))
    np.testing.assert_allclose(fitness.numpy(), [good[0], worst, good[1], good[2]])
    assert problem.last_stats.nonfinite_count == 1
    assert np.isfinite(problem.last_stats.episode_return_mean)


def test_nonfinite_observation_is_kept_out_of_obs_stats():
    problem = toy_problem(env_config={"nan_obs_seed": SEED}, observation_normalization=True)
    fitness = problem.evaluate(bias_params([0.0, 0.0]), seed=SEED)
    assert torch.isfinite(fitness).all() and float(fitness[0]) < float(fitness[1])
    n1 = toy_lengths(SEED + 1, 4, 1)[0]
    seen = np.array([[0, SEED], [1, SEED]] + [[t, SEED + 1] for t in range(n1)], np.float64)
    np.testing.assert_allclose(problem.obs_stats.mean.numpy(), seen.mean(0))
    assert problem.last_stats.nonfinite_count == 1


def test_failing_step_is_retried_on_a_fresh_env():
    problem = toy_problem(env_config={"fail_seed": SEED + 2})
    toy_env.FAILURES[0] = 1
    with pytest.warns(UserWarning, match="retrying on a fresh env"):
        fitness = problem.evaluate(bias_params([0.0, 0.0, 0.0]), seed=SEED)
    np.testing.assert_allclose(fitness.numpy(), [episode_lengths(SEED, j, 4, 1)[0]
                                                 for j in range(3)])
    assert problem.interaction_count == sum(episode_lengths(SEED, j, 4, 1)[0] for j in range(3))


def test_failing_step_twice_raises_with_env_solution_and_cause():
    problem = toy_problem(env_config={"fail_seed": SEED + 2})
    toy_env.FAILURES[0] = 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(EvaluationError) as info:
            problem.evaluate(bias_params([0.0, 0.0, 0.0]), seed=SEED)
    message = str(info.value)
    assert TOY_ID in message and "solution 2" in message and "simulator exploded" in message
    toy_env.FAILURES[0] = 0


def test_discrete_actions_are_argmax_of_outputs():
    problem = toy_problem(env_config={"discrete": True})
    assert problem.act_length == 3
    params = torch.zeros(1, problem.solution_length)
    params[0, -3:] = torch.tensor([0.0, 5.0, 1.0])  # biases: choice 1, reward 2 per step
    fitness = problem.evaluate(params, seed=SEED)
    assert float(fitness[0]) == 2.0 * toy_lengths(SEED, 4, 1)[0]


NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize(("discrete", "biases", "per_step"), [
    (False, [[0.5], [NAN], [-0.5]], [1.5, 0.5]),  # Box: the NaN action makes a NaN reward
    # Discrete: choices 1 and 0; argmax made the NaN scores choice 0 (reward 1 per step)
    (True, [[0.0, 5.0, 1.0], [NAN, NAN, NAN], [5.0, 0.0, 0.0]], [2.0, 1.0]),
    # one NaN score fails its row; -inf is a choice never taken, not a failure
    (True, [[-INF, 5.0, 1.0], [0.0, NAN, 0.0], [5.0, 0.0, -INF]], [2.0, 1.0]),
])
def test_nan_policy_outputs_fail_the_solution_on_box_and_discrete_envs(discrete, biases,
                                                                       per_step):
    problem = toy_problem(env_config={"discrete": discrete})
    params = torch.zeros(3, problem.solution_length)
    params[:, -len(biases[0]):] = torch.tensor(biases)  # zero weights: the outputs are the biases
    fitness = problem.evaluate(params, seed=SEED)
    good = [per_step[0] * episode_lengths(SEED, 0, 4, 1)[0],
            per_step[1] * episode_lengths(SEED, 2, 4, 1)[0]]
    worst = min(good) - max(1.0, max(good) - min(good))
    assert fitness.tolist() == [good[0], worst, good[1]]
    assert problem.last_stats.nonfinite_count == 1
    returns, _ = problem.test_episodes(params[1], 1, SEED)  # a center evaluation: NaN, no score
    assert returns[0].isnan()
    problem.close()


def test_gaussian_action_noise():
    problem = toy_problem(env_config={"length": 200}, action_noise_stdev=0.2)
    fitness = problem.evaluate(bias_params([0.0] * 40), seed=SEED)
    lengths = np.array([toy_lengths(SEED + j, 200, 1)[0] for j in range(40)])
    noise_means = fitness.numpy() / lengths - 1.0  # mean of clip(N(0, 0.2^2)) per solution
    assert abs(noise_means.mean()) < 0.01  # uniform noise in [0, 0.2) would give 0.1
    assert np.std(noise_means) == pytest.approx(0.2 / np.sqrt(lengths.mean()), rel=0.35)


def test_test_episodes_are_seeded_and_leave_counters_alone():
    problem = toy_problem(observation_normalization=True, num_episodes=2,
                          alive_bonus_schedule=(1, 5.0), action_noise_stdev=1.0)
    returns, _ = problem.test_episodes(torch.tensor([0.0, 0.0, 0.5]), 3, seed=7)
    np.testing.assert_allclose(returns.numpy(), [1.5 * toy_lengths(7 + k, 4, 1)[0]
                                                 for k in range(3)])
    assert problem.interaction_count == 0 and problem.episode_count == 0
    assert float(problem.obs_stats.count) == 0


def test_state_dict_resumes_identically():
    problem = toy_problem(observation_normalization=True, action_noise_stdev=0.3)
    params = torch.tensor([[0.1, -0.1, 0.2], [0.0, 0.3, -0.2]])
    problem.evaluate(params)
    state = problem.state_dict()
    expected = problem.evaluate(params)
    other = toy_problem(observation_normalization=True, action_noise_stdev=0.3)
    other.load_state_dict(state)
    torch.testing.assert_close(other.evaluate(params), expected)
    assert other.interaction_count == problem.interaction_count


def test_unknown_env_names_close_ids():
    with pytest.raises(UnknownEnvError, match="NeurorunToy-v0"):
        make_problem("NeurorunToy-v9")


def test_non_box_observation_space_is_refused():
    with pytest.raises(TypeError, match="Box observation space"):
        toy_problem(env_config={"discrete_obs": True})


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match="alive_bonus_schedule"):
        toy_problem(alive_bonus_schedule=(1, 2, 3, 4))
    with pytest.raises(ValueError, match="max_num_envs"):
        toy_problem(max_num_envs=0)
    with pytest.raises(ValueError, match="solution_length|expected"):
        toy_problem().evaluate(torch.zeros(2, 5))
