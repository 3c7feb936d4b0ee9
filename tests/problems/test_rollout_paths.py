"""The rollout's tensor path (envs without a numpy interface, e.g. brax) on the checks of
test_problem and test_equivalence, whose expected values are computed by hand or by plain
gymnasium loops. gymnasium envs take the host (numpy) path; here they are made to take the
tensor path."""

from __future__ import annotations

import pytest

import neurorun.problems.host_evaluation as host_evaluation
from neurorun.problems import rollout as rollout_module

from . import test_equivalence, test_problem


@pytest.fixture
def tensor_path(monkeypatch):
    """Every rollout sees its env as one without a numpy interface."""
    original = rollout_module.rollout
    seen = []

    def rollout(env, *args, **kwargs):
        monkeypatch.setattr(env, "host_arrays", False)
        seen.append(env)
        return original(env, *args, **kwargs)

    monkeypatch.setattr(host_evaluation, "rollout", rollout)
    yield
    assert seen, "no rollout ran"


@pytest.mark.parametrize("check", [
    test_problem.test_exact_fitness_one_episode,
    lambda: test_problem.test_num_episodes_mean_and_counts(3),
    test_problem.test_episode_length_truncates,
    lambda: test_problem.test_alive_bonus_and_decrease_rewards_by((2, 10.0), 2, 2),
    lambda: test_problem.test_alive_bonus_and_decrease_rewards_by((1, 3, 6.0), 1, 3),
    test_problem.test_obs_stats_cover_exactly_the_observations_acted_on,
    test_problem.test_normalization_uses_stats_from_before_the_call,
    test_problem.test_nonfinite_reward_gets_worst_fitness_and_is_counted,
    test_problem.test_nonfinite_observation_is_kept_out_of_obs_stats,
    test_problem.test_discrete_actions_are_argmax_of_outputs,
    test_problem.test_gaussian_action_noise,
    test_equivalence.test_recurrent_policies_restart_their_state_each_episode,
    lambda: test_equivalence.test_batched_equals_single_policy_loops("Pendulum-v1", False,
                                                                     0.5, None),
])
def test_tensor_path_passes_the_hand_checks(check, tensor_path):
    check()
