"""A real ray cluster, started the way users start one: `ray start --head` on loopback, then two
worker nodes with `ray start --address` (one CPU each), in a temporary folder and a network
namespace of its own, stopped by process id (``local_cluster.LocalCluster``). Drivers run in
fresh processes in that namespace, as a user's `neurorun` would: ray reads its auth mode when
it is imported."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.test_readme_commands import BUDGET, CLUSTER_COMMANDS
from tests.parallel.conftest import ROOT
from tests.parallel.local_cluster import LocalCluster, free_port
from tests.parallel.netns import alone, interfaces, listening, loopback_only

pytestmark = pytest.mark.extras("ray")

NEURORUN = shutil.which("neurorun", path=str(Path(sys.executable).parent)) or "neurorun"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with LocalCluster(tmp_path_factory.mktemp("cluster"), head_cpus=1,
                      worker_cpus=(1, 1)) as running:
        yield running
    assert not running.alive(), "the cluster's processes outlived the test"


def node_of(cluster: LocalCluster, pid: int) -> int:
    """The node (0: head) whose raylet started process ``pid`` (its parent)."""
    parent = int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])
    return next(i for i, pids in enumerate(cluster.nodes) if parent in pids)


def driver(cluster: LocalCluster, code: str, *args: str) -> subprocess.Popen:
    argv = cluster.command([sys.executable, "-c", code, cluster.address, *args])
    return subprocess.Popen(argv, cwd=ROOT, env={**cluster.env, "PYTHONPATH": ROOT}, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def finish(process: subprocess.Popen, timeout: float = 300) -> str:
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, out + err[-4000:]
    return out


SPREAD = """
import json, sys, numpy as np, torch
from neurorun.algorithms import make_algorithm
from neurorun.parallel import RayEvaluator
from neurorun.problems import make_problem
kwargs = {"env": "CartPole-v1", "seed": 2, "vectorization": "sync"}
local = make_problem(**kwargs)
params = torch.randn(6, local.solution_length, generator=torch.Generator().manual_seed(1))
options = dict(solution_length=local.solution_length, popsize=6, seed=3, stdev_init=0.3,
               center_learning_rate=0.1)
with RayEvaluator(kwargs, num_actors=3, address=sys.argv[1]) as evaluator:
    print(json.dumps(evaluator.pool.pids), flush=True)
    np.testing.assert_array_equal(evaluator.evaluate(params, seed=4).numpy(),
                                  local.evaluate(params, seed=4).numpy())
    algo, alone = make_algorithm("openai_es", **options), make_algorithm("openai_es", **options)
    evaluator.draw_seed = lambda: 11
    fitness = evaluator.distributed_step(algo)
    expected = local.evaluate(alone.ask(), seed=11)
    alone.tell(expected)
    np.testing.assert_array_equal(fitness.numpy(), expected.numpy())
    torch.testing.assert_close(algo.center, alone.center, rtol=1e-5, atol=1e-6)
print("driver ok")
"""


def test_actors_spread_over_the_nodes_and_equal_the_local_run(cluster):
    process = driver(cluster, SPREAD)
    pids = json.loads(process.stdout.readline() or "[]")
    nodes = sorted(node_of(cluster, pid) for pid in pids)
    assert "driver ok" in finish(process)
    assert nodes == [0, 1, 2]  # one actor per node: SPREAD placement over the three CPUs
    assert len(cluster.alive()) >= len(cluster.nodes[0])  # the driver left the cluster up


@pytest.mark.parametrize("command", CLUSTER_COMMANDS)
def test_readme_cluster_commands_run_as_printed(cluster, tmp_path, command):
    """The `parallel.address=auto` commands of README and docs/, with RAY_ADDRESS as a
    cluster's users set it (or as `ray start --head` on this machine lets ray find itself)."""
    args = shlex.split(command, comments=True)[1:]
    done = subprocess.run(cluster.command([NEURORUN, *args, *BUDGET]), cwd=tmp_path,
                          capture_output=True, text=True, timeout=300,
                          env={**cluster.env, "RAY_ADDRESS": cluster.address})
    assert done.returncode == 0, done.stderr[-3000:]
    assert cluster.ray("status", f"--address={cluster.address}").count("node_") == 3


def run_cli(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    """neurorun alone (``netns.alone``): the module's cluster, or a local ray of a test
    beside it, is not there for it to find."""
    return subprocess.run(alone([NEURORUN, "env=CartPole-v1", "parallel=ray", *args, *BUDGET]),
                          cwd=cwd, capture_output=True, text=True, timeout=120, env=env)


def test_an_address_where_nothing_listens_fails_in_seconds_in_one_line(tmp_path):
    started = time.monotonic()
    done = run_cli(f"parallel.address=127.0.0.1:{free_port()}", cwd=tmp_path,
                   env=dict(os.environ))
    assert done.returncode == 2 and time.monotonic() - started < 100  # ray waited minutes
    assert re.search(r"parallel.address='127.0.0.1:\d+': nothing answers there.*Fix: start a "
                     r"cluster with `ray start --head`", done.stderr), done.stderr[-2000:]
    assert "Traceback" not in done.stderr


def test_an_empty_address_starts_a_local_ray_whatever_ray_address_says(tmp_path):
    """With RAY_ADDRESS naming a port where nothing listens, `parallel=ray` (no address) hung
    silently for minutes: ray joins RAY_ADDRESS where it is given no address."""
    done = run_cli(env={**os.environ, "RAY_ADDRESS": f"127.0.0.1:{free_port()}"}, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "objective:" in done.stdout


def test_auto_with_a_ray_address_ray_cannot_read_names_it(monkeypatch):
    """RAY_ADDRESS=garbage with parallel.address=auto was ray's bare "Invalid address format"."""
    from neurorun.parallel import cluster

    monkeypatch.setenv("RAY_ADDRESS", "garbage")
    with pytest.raises(cluster.ClusterError, match=r"^parallel.address='auto': RAY_ADDRESS="
                                                   r"'garbage' is no address ray reads .*Fix: "):
        cluster.connect("auto")


def test_auto_finding_a_head_that_answers_nowhere_fails_in_seconds_in_one_line(monkeypatch):
    """ray's `auto` joins a head process it sees on this machine, which may answer nowhere this
    process reaches (one in a network namespace or container of its own, as this module's
    cluster is): ray waited minutes for it, silently. It is checked as a host:port is."""
    from ray._private import services

    from neurorun.parallel import cluster

    head = f"127.0.0.2:{free_port()}"  # loopback, but not an address ray rewrites
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    # the head processes ray sees on this machine, and no `ray start` of its own here
    monkeypatch.setattr(services, "_find_address_from_flag", lambda flag: {head})
    monkeypatch.setattr(services, "find_bootstrap_address", lambda temp_dir: None)
    expected = rf"parallel.address='auto' \(ray found {head}\): nothing answers there .*"
    with pytest.raises(cluster.ClusterError, match=expected + "Fix: start a cluster"):
        cluster.connect("auto")


def test_auto_without_a_cluster_says_how_to_start_one(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    done = run_cli("parallel.address=auto", cwd=tmp_path,
                   env={**env, "RAY_TMPDIR": str(tmp_path / "no-ray")})
    assert done.returncode == 2, done.stderr[-2000:]
    assert "no running ray cluster was found" in done.stderr and "ray start --head" in (
        done.stderr)
    assert "Traceback" not in done.stderr


MISMATCH = """
import sys, ray
ray.__version__ = "2.0.0"  # as a driver from another environment would report
from neurorun.parallel import cluster
try:
    cluster.connect(sys.argv[1])
except cluster.ClusterError as error:
    print(error)
"""


def test_a_cluster_of_another_ray_version_is_refused_in_one_line(cluster):
    out = finish(driver(cluster, MISMATCH))
    assert "the cluster runs another ray or Python than this process" in out
    assert "2.0.0" in out and "pip install ray==" in out


HOLD_ACTORS = """
import sys
from neurorun.parallel import RayEvaluator
with RayEvaluator({"env": "CartPole-v1"}, num_actors=2, address=sys.argv[1]):
    print("up", flush=True)
    sys.stdin.readline()
"""


def test_the_cluster_and_its_clients_listen_on_loopback_only(cluster):
    """`ray start --head --node-ip-address=127.0.0.1` listened on every interface
    (the GCS and raylets on [::], ray's helpers on the machine's address). Every socket that
    the cluster's processes, a driver and its actors listen on is reachable through loopback
    only."""
    process = driver(cluster, HOLD_ACTORS)
    assert process.stdout.readline() == "up\n", process.communicate()[1][-3000:]
    sockets = {(pid, *bound) for pid in cluster.alive() for bound in listening(pid)}
    process.stdin.write("done\n")
    process.stdin.flush()
    finish(process)
    port = int(cluster.address.rpartition(":")[2])
    assert port in {bound_port for _, _, bound_port in sockets}  # the head's GCS was seen
    exposed = [(pid, address, bound_port, sorted(interfaces(pid)))
               for pid, address, bound_port in sockets if not loopback_only(pid, address)]
    assert not exposed, f"reachable beyond loopback (pid, address, port, interfaces): {exposed}"


LOST_NODE = """
import json, sys, numpy as np, torch
from neurorun.parallel import RayEvaluator
from tests.parallel.toy_factory import SPEC, toy_fitness
toy = {"env": SPEC, "seed": 5, "max_num_envs": 2,
       "env_config": {"length": 4, "step_sleep": 0.05, "raise_seed": 999}}
with RayEvaluator(toy, num_actors=2, address=sys.argv[1], max_actor_restarts=2) as evaluator:
    print(json.dumps(evaluator.pool.pids), flush=True)
    sys.stdin.readline()  # the test killed a node
    params = torch.zeros(8, 3)
    params[:, 2] = torch.linspace(-0.9, 0.9, 8)
    for generation in range(3):
        fitness = evaluator.evaluate(params, seed=100 + generation)
        np.testing.assert_allclose(fitness.numpy(), toy_fitness(
            params.numpy(), 100 + generation + np.arange(8), 4), rtol=1e-6)
    print("restarts", evaluator.pool.restarts, flush=True)
print("driver ok")
"""


def test_a_lost_worker_node_is_replaced_and_the_results_are_the_same(cluster):
    """Last in this module: the cluster has one node fewer afterwards."""
    process = driver(cluster, LOST_NODE)
    pids = json.loads(process.stdout.readline() or "[]")
    lost = max(node_of(cluster, pid) for pid in pids)  # a worker node holding an actor
    assert lost > 0
    cluster.kill_node(lost)
    process.stdin.write("go\n")
    process.stdin.flush()
    out = finish(process)
    assert "restarts 1" in out and "driver ok" in out

