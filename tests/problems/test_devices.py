"""The compiled evaluation on several jax devices: the same seed gives the same fitness,
counts, episode returns and observation statistics on 1, 2 or 4 devices, and as the step-by-step
path (tests/conftest.py gives jax's CPU 4 host devices).

Each pair's episode starts from its own seed's key and draws its action noise from its own
key, so which slot or device runs it does not matter; only a simulator's rounding at another
batch size may differ (float tolerance).
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
import torch

from neurorun.problems import make_problem
from neurorun.problems.devices import HOST_COUNT_FLAG, host_device_flags, jax_devices
from neurorun.problems.jax.pairs import split_pairs

pytestmark = pytest.mark.extras("jax")

MLP = "Linear(obs_length, 8) >> Tanh() >> Linear(8, act_length)"
LSTM = "LSTM(obs_length, 6) >> Linear(6, act_length)"
POPSIZE = 6  # x 2 episodes: 12 pairs on 5 slots in all (more pairs than slots on every device)


def _evaluations(env: str, network: str, length: int, devices, **options) -> dict:
    options = {"max_num_envs": 5, **options}
    problem = make_problem(env, network, episode_length=length, num_episodes=2,
                           observation_normalization=True, seed=3,
                           jit=devices is not None, devices=devices or 1, **options)
    generator = torch.Generator().manual_seed(0)
    fitness = []
    for _ in range(2):  # the second generation normalizes with the statistics collected
        params = torch.randn(POPSIZE, problem.solution_length, generator=generator)
        fitness.append(problem.evaluate(params, seed=11))
    solution = torch.randn(problem.solution_length, generator=generator)
    returns, lengths = problem.test_episodes(solution, 3, seed=2)
    stats = problem.last_stats
    return {"fitness": torch.stack(fitness), "test": returns, "test_lengths": lengths,
            "counts": (problem.interaction_count, problem.episode_count,
                       stats.num_interactions, stats.num_episodes),
            "returns": (stats.episode_return_min, stats.episode_return_mean,
                        stats.episode_return_max),
            "mean": problem.obs_stats.mean, "stdev": problem.obs_stats.stdev}


def _assert_same(got: dict, expected: dict) -> None:
    assert got["counts"] == expected["counts"]
    torch.testing.assert_close(got["fitness"], expected["fitness"], rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(got["test"], expected["test"], rtol=1e-5, atol=1e-4)
    assert torch.equal(got["test_lengths"], expected["test_lengths"])
    assert got["returns"] == pytest.approx(expected["returns"], rel=1e-5, abs=1e-4)
    torch.testing.assert_close(got["mean"], expected["mean"], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(got["stdev"], expected["stdev"], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(("env", "network", "length", "options"), [
    ("brax::inverted_pendulum", LSTM, 40, {}),
    pytest.param("brax::inverted_pendulum", MLP, 40, {"streaming": False,
                                                       "max_num_envs": POPSIZE},
                 marks=pytest.mark.slow),
    pytest.param("brax::inverted_pendulum", "Linear(obs_length, act_length)", 40, {},
                 marks=pytest.mark.slow),
    ("playground::CartpoleBalance", "Linear(obs_length, act_length)", 30, {}),
    pytest.param("playground::CartpoleBalance", MLP, 30, {}, marks=pytest.mark.slow),
    pytest.param("playground::CartpoleBalance", LSTM, 30, {}, marks=pytest.mark.slow),
], ids=["pendulum-lstm", "pendulum-mlp-lock-step", "pendulum-linear", "cartpole-linear",
        "cartpole-mlp", "cartpole-lstm"])
def test_one_two_and_four_devices_give_the_step_by_step_results(env, network, length,
                                                                options):
    stepwise = _evaluations(env, network, length, None, **options)
    for devices in (1, 2, 4):
        _assert_same(_evaluations(env, network, length, devices, **options), stepwise)


def test_action_noise_is_the_pairs_own_on_any_number_of_devices():
    runs = [_evaluations("brax::inverted_pendulum", LSTM, 40, devices,
                         action_noise_stdev=0.5) for devices in (1, 4)]
    _assert_same(runs[1], runs[0])
    plain = _evaluations("brax::inverted_pendulum", LSTM, 40, 1)
    assert not torch.equal(runs[0]["fitness"], plain["fitness"])  # the noise does act


# ----- the split of pairs over devices, by hand -----
def test_streaming_pairs_go_round_robin_with_padding_at_the_end():
    split = split_pairs(3, 2, 4, streaming=True)  # pairs 0..5 (k = e * 3 + j)
    assert split.pair_index.tolist() == [[0, 4], [1, 5], [2, -1], [3, -1]]
    assert split.counts() == [2, 2, 1, 1] and split.following == 0
    assert split.slots(5) == 2 and split.slots(100) == 2 and split.slots(1) == 1


def test_lock_step_gives_each_device_whole_solutions():
    split = split_pairs(3, 2, 2, streaming=False)  # m = 2 solutions a device
    # device 0: solutions 0, 1 (pairs 0, 1 then 3, 4); device 1: solution 2 (pairs 2, 5)
    assert split.pair_index.tolist() == [[0, 1, 3, 4], [2, -1, 5, -1]]
    assert split.following == 2 and split.slots(3) == 2


def test_tables_give_each_pair_its_seeds_key_and_gather_restores_pair_order():
    split = split_pairs(3, 2, 2, streaming=True)  # device 0: pairs 0, 2, 4; device 1: 1, 3, 5
    tables = split.tables(seed=100, noise_seed=7)
    assert tables.pair_solution.tolist() == [[0, 2, 1], [1, 0, 2]]
    # pair k = e * 3 + j is seeded 100 + j + e * 2**20, its key that seed's PRNGKey
    seed_of = {0: 100, 1: 101, 2: 102, 3: 100 + 2**20, 4: 101 + 2**20, 5: 102 + 2**20}
    for device, row in enumerate(split.pair_index):
        for t, pair in enumerate(row):
            expected = np.asarray(jax.random.PRNGKey(seed_of[pair]))
            assert tables.pair_keys[device, t].tolist() == expected.tolist()
    out = {"returns": np.array([[10., 12, 14], [11, 13, 15]]),
           "lengths": np.array([[0, 2, 4], [1, 3, 5]]),
           "finished": np.ones((2, 3), bool), "failed": np.array([[0, 1, 0, 1], [0, 0, 0, 0]],
                                                                  bool)}
    gathered = split.gather(out)
    assert gathered["returns"].tolist() == [10, 11, 12, 13, 14, 15]
    assert gathered["lengths"].tolist() == [0, 1, 2, 3, 4, 5]
    assert gathered["failed"].tolist() == [False, True, False]  # padding row dropped


# ----- which devices, and the host device count -----
def test_devices_name_local_jax_devices_and_refuse_what_is_not_there():
    present = jax.local_devices()
    assert len(present) == 4  # tests/conftest.py
    assert jax_devices("auto") == present and jax_devices(2) == present[:2]
    assert jax_devices([3, 1]) == [present[3], present[1]]
    with pytest.raises(ValueError, match=r"problem.devices=5, but jax has 4 cpu device.*"
                                         "at most 4.*" + HOST_COUNT_FLAG):
        jax_devices(5)
    with pytest.raises(ValueError, match=r"no device with id \[7\].*ids \[0, 1, 2, 3\]"):
        jax_devices([0, 7])
    for bad in (0, -1, "all", [], [1, 1], [True], 2.5):
        with pytest.raises(ValueError, match="problem.devices"):
            jax_devices(bad)


def test_host_device_flags_follow_devices_and_never_override_the_users(monkeypatch):
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1, 2})
    flags, said = host_device_flags("auto", {"XLA_FLAGS": "--xla_dump_to=/tmp/x"})
    assert flags == f"--xla_dump_to=/tmp/x {HOST_COUNT_FLAG}=3" and "one per core" in said
    assert host_device_flags(2, {})[0] == f"{HOST_COUNT_FLAG}=2"
    assert host_device_flags([0, 5], {})[0] == f"{HOST_COUNT_FLAG}=6"
    flags, said = host_device_flags("auto", {"XLA_FLAGS": f"{HOST_COUNT_FLAG}=8"})
    assert flags is None and "8 host device(s), as XLA_FLAGS" in said


def test_a_popsize_that_leaves_devices_idle_says_how_it_was_split(caplog):
    problem = make_problem("brax::inverted_pendulum", MLP, episode_length=10, seed=0,
                           devices=4)
    with caplog.at_level("INFO", logger="neurorun"):
        problem.evaluate(torch.zeros(3, problem.solution_length), seed=0)
        problem.evaluate(torch.zeros(3, problem.solution_length), seed=1)
        problem.test_episodes(torch.zeros(problem.solution_length), 5, seed=0)  # no news
    said = [r.message for r in caplog.records if "keeps every device busy" in r.message]
    assert said == ["3 solutions x 1 episodes on 4 devices: 1, 1, 1, 0 pairs each (a multiple "
                    "of 4 keeps every device busy)"]  # once


def test_several_cpu_devices_step_in_chunks_that_keep_lapack_inline():
    """Several CPU devices step jax envs in chunks small enough that jax's LAPACK kernels run
    inline (a kernel that splits its batch over the thread pool stalls when every device
    does it at once): MJX's constraint solve (a Cholesky factor) of CartpoleBalance sets a
    limit on two devices, none on one. Chunked or not, the same fitness to rounding."""
    from neurorun.problems.jax.lapack import LAPACK_INLINE_WORK, inline_chunk

    problem = make_problem("playground::CartpoleBalance", episode_length=20, devices=2,
                           max_num_envs=12, seed=0)
    rollout = problem.jax_rollout
    assert rollout.largest_chunk is not None
    assert 1 <= rollout.largest_chunk <= LAPACK_INLINE_WORK
    assert rollout.largest_chunk == inline_chunk(rollout.env)
    assert make_problem("playground::CartpoleBalance", episode_length=20,
                        devices=1).jax_rollout.largest_chunk is None
    params = torch.randn(12, problem.solution_length, generator=torch.Generator().manual_seed(1))
    rollout.largest_chunk = 2  # 6 slots a device: 3 chunks of 2
    chunked = problem.evaluate(params, seed=5)
    rollout.one_batch = True  # one call of 6 envs a device
    torch.testing.assert_close(problem.evaluate(params, seed=5), chunked, rtol=1e-4, atol=1e-3)
