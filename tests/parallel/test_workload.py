"""Splitting populations, adding sums, planning distributed shares and the checks before
ray starts, without ray."""

import subprocess
import sys

import numpy as np
import pytest
import torch

from neurorun.algorithms import make_algorithm
from neurorun.parallel.distributed import Share, add_sums, plan_round, require_distributable
from neurorun.parallel.workload import (
    check_capacity,
    check_local_actors,
    check_workload,
    local_cpu_share,
    resolve_num_actors,
    split_workload,
    subbatch_bounds,
)


@pytest.mark.parametrize("total", [1, 5, 7, 13])
@pytest.mark.parametrize("options", [{}, {"num_subbatches": 3}, {"subbatch_size": 2},
                                     {"subbatch_size": 5}, {"num_subbatches": 20}])
def test_subbatches_cover_every_solution_once(total, options):
    bounds = subbatch_bounds(total, num_actors=2, **options)
    covered = np.concatenate([np.arange(first, stop) for first, stop in bounds])
    np.testing.assert_array_equal(covered, np.arange(total))
    assert all(stop > first for first, stop in bounds)


def test_subbatch_sizes_by_hand():
    assert subbatch_bounds(7, num_actors=2) == [(0, 4), (4, 7)]
    assert subbatch_bounds(7, num_actors=2, subbatch_size=3) == [(0, 3), (3, 6), (6, 7)]
    assert subbatch_bounds(7, num_actors=2, num_subbatches=3) == [(0, 3), (3, 5), (5, 7)]


@pytest.mark.parametrize("num_actors, num_subbatches, subbatch_size, message", [
    ("many", None, None, r"num_actors='many': expected an integer >= 1 or one of \['max'"),
    (0, None, None, "num_actors=0: expected an integer >= 1"),
    (True, None, None, "num_actors=True: expected an integer >= 1"),
    (2.0, None, None, "num_actors=2.0: expected an integer >= 1"),
    (2, 0, None, r"num_subbatches=0: expected an integer >= 1 or null\. Fix: "
                 "parallel.num_subbatches="),
    (2, None, -1, "subbatch_size=-1: expected an integer >= 1 or null"),
    ("max", 2, 2, "num_subbatches=2 and subbatch_size=2 are exclusive"),
])
def test_check_workload_refuses_counts_before_ray_starts(num_actors, num_subbatches,
                                                         subbatch_size, message):
    with pytest.raises(ValueError, match=message):
        check_workload(num_actors, num_subbatches, subbatch_size)


@pytest.mark.parametrize("num_actors, num_subbatches, subbatch_size", [
    ("max", None, None), ("num_devices", 3, None), (1, None, 5), (8, None, None)])
def test_check_workload_takes_valid_counts(num_actors, num_subbatches, subbatch_size):
    check_workload(num_actors, num_subbatches, subbatch_size)


def test_split_workload_by_hand():
    assert split_workload(10, 3) == [4, 3, 3]
    assert split_workload(2, 3) == [1, 1, 0]


def test_resolve_num_actors():
    assert resolve_num_actors("max", num_cpus=8, num_gpus=0, num_gpus_per_actor=None) == (8, 0.0)
    assert resolve_num_actors(3, num_cpus=8, num_gpus=2, num_gpus_per_actor=0.5) == (3, 0.5)
    assert resolve_num_actors("num_gpus", num_cpus=8, num_gpus=2,
                              num_gpus_per_actor=None) == (2, 1.0)
    assert resolve_num_actors("num_devices", num_cpus=8, num_gpus=2,
                              num_gpus_per_actor=None) == (2, 1.0)
    assert resolve_num_actors("num_devices", num_cpus=4, num_gpus=0,
                              num_gpus_per_actor=None) == (4, 0.0)
    with pytest.raises(ValueError, match="no GPU"):
        resolve_num_actors("num_gpus", num_cpus=4, num_gpus=0, num_gpus_per_actor=None)
    with pytest.raises(ValueError, match="num_gpus_per_actor"):
        resolve_num_actors("num_gpus", num_cpus=4, num_gpus=1, num_gpus_per_actor=1)


def test_added_sums_by_hand():
    parts = [{"w.eps": torch.tensor([1.0, 2.0])}, {"w.eps": torch.tensor([4.0, -1.0])}]
    np.testing.assert_allclose(add_sums(parts)["w.eps"].numpy(), [5.0, 1.0])


def _pgpe(optimizer=None):
    return make_algorithm("pgpe", solution_length=4, popsize=10, seed=0,
                          center_learning_rate=0.3, stdev_learning_rate=0.2, stdev_init=0.5,
                          optimizer=optimizer)


def test_actors_a_local_ray_cannot_place_are_refused_at_once():
    check_capacity(2, cpus_each=1, gpus_each=0, num_cpus=2, num_gpus=0)
    check_capacity(4, cpus_each=0.5, gpus_each=0, num_cpus=2, num_gpus=0)  # 4 x 0.5 = 2
    with pytest.raises(ValueError, match=r"num_actors=3 actors x 1 CPU each need 3 CPUs, but "
                                         r"this local ray has 2.*Fix: .*actor_config.num_cpus"):
        check_capacity(3, cpus_each=1, gpus_each=0, num_cpus=2, num_gpus=0)
    with pytest.raises(ValueError, match=r"2 actors x 0.75 GPU each need 1.5 GPUs.*has 1.*Fix"):
        check_capacity(2, cpus_each=0.5, gpus_each=0.75, num_cpus=2, num_gpus=1)


def test_more_actors_than_local_cpus_share_them_unless_cpus_were_given():
    assert local_cpu_share(8, 2, {}) == 0.25
    assert local_cpu_share(3, 2, {}) == pytest.approx(2 / 3)
    assert local_cpu_share(2, 2, {}) is None  # one CPU each fits
    assert local_cpu_share(8, 2, {"num_cpus": 1}) is None  # the user's choice is checked as is


def test_full_cmaes_is_refused_and_every_other_algorithm_accepted():
    with pytest.raises(ValueError, match="cmaes.*algo=sep_cmaes.*algo.distributed=false"):
        require_distributable(make_algorithm("cmaes", solution_length=4, popsize=6, seed=0,
                                             stdev_init=1.0))
    require_distributable(_pgpe("clipup"))
    require_distributable(make_algorithm("ars", solution_length=4, num_directions=3,
                                         step_size=0.1, noise=0.1))


def test_shares_keep_mirrored_pairs_and_replica_drops_optimizer():
    algo = _pgpe("clipup")
    assert plan_round(algo, 0, num_actors=3) == [Share(0, 4), Share(4, 4), Share(8, 2)]
    assert plan_round(algo, 10, num_actors=2, subbatch_size=3) == [
        Share(10, 4), Share(14, 4), Share(18, 2)]  # 3 rounds up to whole pairs
    assert plan_round(algo, 0, num_actors=2, num_subbatches=5) == [
        Share(2 * k, 2) for k in range(5)]
    assert algo.replica().optimizer is None and algo.optimizer is not None


def test_importing_the_package_does_not_import_ray():
    code = ("import sys, neurorun.parallel as p; p.RayEvaluator; "
            "assert 'ray' not in sys.modules, 'ray imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


# parallel.num_actors=5000 on 2 CPUs started ray, which crashed and
# finished no generation; 100000 gave ray's own "precision of the fractional quantity" line.
# Refused before ray starts: each actor is a process of its own (ACTOR_BYTES of memory)
def test_more_local_actors_than_the_memory_holds_are_refused_before_ray_starts():
    gb = 10**9
    check_local_actors(40, free_bytes=10 * gb, memory_share=0.8)  # 40 x 0.2 GB = 8 GB
    with pytest.raises(ValueError, match=r"^parallel.num_actors=5000: each ray actor is a "
                       r"process .*about 1,000 GB.*10.0 GB free.*Fix: .*num_actors=max.*40 or "
                       r"less"):
        check_local_actors(5000, free_bytes=10 * gb, memory_share=0.8)


def test_a_cpu_share_below_rays_precision_is_refused():
    check_capacity(20000, cpus_each=1e-4, gpus_each=0, num_cpus=2, num_gpus=0)
    with pytest.raises(ValueError, match=r"parallel.num_actors=100000 actors .*2e-05 CPU each.*"
                       r"ray's smallest, 0.0001.*Fix: .*num_actors=max"):
        check_capacity(100000, cpus_each=2e-5, gpus_each=0, num_cpus=2, num_gpus=0)


@pytest.mark.extras("ray")  # parallel=ray's config check asks for ray first
def test_the_config_check_refuses_local_actors_the_machine_cannot_hold(monkeypatch):
    from neurorun.cli.app import compose_config
    from neurorun.config import checks as config_checks
    from neurorun.config import machine

    monkeypatch.setattr(machine, "_free_memory", lambda: 10**10)
    for overrides, named in ((["parallel.num_actors=5000"], r"num_actors=5000"),
                             (["parallel.num_cpus=5000"], r"num_cpus=5000 \(num_actors=max")):
        cfg = compose_config(["debug=default", "parallel=ray", *overrides])
        with pytest.raises(config_checks.ConfigError,
                           match=rf"^parallel.{named}.*: each ray actor"):
            config_checks.validate_config(cfg)
    config_checks.validate_config(compose_config(["debug=default", "parallel=ray",
                                          "parallel.num_actors=4"]))
    joined = compose_config(["debug=default", "parallel=ray", "parallel.num_actors=5000",
                             "parallel.address=auto"])  # a cluster's memory is not this machine's
    config_checks.validate_config(joined)


@pytest.mark.parametrize("bad", [-1, 1.5, None])
def test_a_bad_restart_count_is_refused_before_ray_starts(bad):
    from neurorun.parallel import RayEvaluator

    with pytest.raises(ValueError, match=rf"^max_actor_restarts={bad!r}: expected an integer "
                                         r">= 0\. Fix: parallel\.max_actor_restarts="):
        RayEvaluator({"env": "CartPole-v1"}, max_actor_restarts=bad)
