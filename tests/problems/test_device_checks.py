"""How many devices a run may ask for, checked before jax starts: XLA makes
every CPU host device asked for, and a million of them filled 24 GB until the OOM killer came.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from neurorun.problems.devices import (
    HOST_COUNT_FLAG,
    check_devices,
    check_xla_flags,
    host_device_flags,
)

NEURORUN = [sys.executable, "-m", "neurorun.cli.app"]


@pytest.fixture
def three_cores(monkeypatch):
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1, 2})


def test_a_count_above_eight_per_core_is_refused(three_cores):
    assert check_devices(24) == 24 and check_devices([0, 23]) == [0, 23]  # 8 x 3 cores
    for bad, said in ((25, "problem.devices=25"), (1_000_000, "problem.devices=1000000"),
                      ([0, 24], "highest id 24"), ([0, 99999], "highest id 99999")):
        with pytest.raises(ValueError, match=said) as raised:
            check_devices(bad)
        assert "at most 8 per usable core (3 here: 24)" in str(raised.value)
        assert "Fix: problem.devices=auto" in str(raised.value)


def test_the_users_xla_flags_are_checked_too(three_cores):
    for bad in ("abc", "", "-2", "0", "4.5"):
        flags = f"--xla_dump_to=/tmp/x {HOST_COUNT_FLAG}={bad}".rstrip("=")
        with pytest.raises(ValueError, match="expected " + HOST_COUNT_FLAG + "=<a count >= 1>"):
            host_device_flags("auto", {"XLA_FLAGS": flags})
    with pytest.raises(ValueError, match="more devices than this machine can hold.*in XLA_FLAGS"):
        host_device_flags("auto", {"XLA_FLAGS": f"{HOST_COUNT_FLAG}=100000"})
    flags, said = host_device_flags("auto", {"XLA_FLAGS": f"{HOST_COUNT_FLAG}=24"})
    assert flags is None and "24 host device(s), as XLA_FLAGS" in said


def _neurorun(tmp_path, *args: str, run: str = "run", **environ: str
              ) -> subprocess.CompletedProcess:
    return subprocess.run([*NEURORUN, "debug=default", "generations=1", *args,
                           f"hydra.run.dir={tmp_path / run}"], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path, env={**os.environ, **environ})


def test_the_command_refuses_a_million_devices_in_one_line(tmp_path):
    done = _neurorun(tmp_path, "problem.devices=1000000")
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("neurorun: config error: problem.devices="
                                                   "1000000 is more devices than")
    assert not (tmp_path / "run").exists()


@pytest.mark.extras("jax")
@pytest.mark.parametrize(("flags", "expected"), [
    # XLA printed its 300-line list of flags, and the run folder stayed
    (f"{HOST_COUNT_FLAG}=abc", f"XLA_FLAGS holds {HOST_COUNT_FLAG}=abc; expected "
     f"{HOST_COUNT_FLAG}=<a count >= 1>. Fix: correct it in XLA_FLAGS, or remove it there and "
     "set problem.devices"),
    # XLA ended the process with its own fatal line as
    # jax started, and the run folder stayed
    (f"{HOST_COUNT_FLAG}=2 --xla_no_such_flag=1", "XLA_FLAGS holds --xla_no_such_flag=1, which "
     "this jax's XLA does not know (XLA would end the run as jax starts). Fix: remove or "
     "correct it in XLA_FLAGS"),
])
def test_a_bad_xla_flag_is_one_line_and_no_run_folder(tmp_path, flags, expected):
    done = _neurorun(tmp_path, "env=brax::inverted_pendulum", "algo.popsize=4",
                     XLA_FLAGS=flags)
    assert done.returncode == 2, done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if "config error" in line]
    assert errors == [f"neurorun: config error: {expected}"]
    assert len(done.stderr.splitlines()) <= 2  # and the preset hint, where one is
    assert not (tmp_path / "run").exists()


@pytest.mark.extras("jax")
def test_flags_xla_knows_pass_and_the_host_count_alone_asks_no_process(monkeypatch):
    import neurorun.problems.devices as devices

    check_xla_flags(f"{HOST_COUNT_FLAG}=2 --xla_cpu_enable_fast_math=false")  # XLA's own flag
    monkeypatch.setattr(devices.subprocess, "run", None)  # any probe now fails the test
    check_xla_flags(f"{HOST_COUNT_FLAG}=2")  # neurorun's own count: nothing to ask
    check_xla_flags("")


def test_devices_on_a_gymnasium_env_are_said_to_be_ignored(tmp_path):
    done = _neurorun(tmp_path, "problem.devices=2")
    assert done.returncode == 0, done.stderr
    assert ("neurorun: problem.devices=2 is ignored: it is for brax and Playground envs "
            "(their compiled evaluation), and env CartPole-v1 runs on gymnasium. Fix: "
            "problem.devices=auto (its default)") in done.stderr.splitlines()
    quiet = _neurorun(tmp_path, run="auto")
    assert "problem.devices" not in quiet.stderr


def test_jax_own_host_count_setting_is_checked_and_wins(three_cores):
    """JAX_NUM_CPU_DEVICES overrides XLA_FLAGS' count in jax (a million of them
    passed the check, which read XLA_FLAGS only)."""
    with pytest.raises(ValueError, match="JAX_NUM_CPU_DEVICES=1000000 is more devices than this"
                                         r" machine can hold: at most 8 per usable core \(3 "
                                         "here: 24"):
        host_device_flags("auto", {"JAX_NUM_CPU_DEVICES": "1000000",
                                   "XLA_FLAGS": f"{HOST_COUNT_FLAG}=2"})
    for bad in ("abc", "0", "2.5"):
        with pytest.raises(ValueError, match="expected a count >= 1"):
            host_device_flags(2, {"JAX_NUM_CPU_DEVICES": bad})
    flags, said = host_device_flags(2, {"JAX_NUM_CPU_DEVICES": "24"})
    assert flags is None and said == ("jax's CPU has 24 host device(s), as JAX_NUM_CPU_DEVICES "
                                      "says")
    assert host_device_flags(2, {"JAX_NUM_CPU_DEVICES": "-1"})[0] == f"{HOST_COUNT_FLAG}=2"


@pytest.mark.extras("jax")
def test_run_from_python_gives_jax_the_host_devices_the_command_would(tmp_path):
    """The neurorun command set XLA_FLAGS from problem.devices, `run(cfg)` from
    Python did not (its jax kept one host device): the run's entry sets it now."""
    script = (
        "from neurorun import compose_config, run\n"
        f"run(compose_config(['env=brax::inverted_pendulum', 'debug=default', 'generations=1', "
        f"'algo.popsize=4', 'problem.devices=3', 'logger.console.quiet=true']), "
        f"run_dir={str(tmp_path / 'run')!r})\n"
        "import jax\nprint(len(jax.local_devices()))\n")
    environ = {key: value for key, value in os.environ.items()
               if key not in ("XLA_FLAGS", "JAX_NUM_CPU_DEVICES")}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path, env=environ)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-1] == "3"


def test_an_unresolvable_devices_value_is_a_config_error_at_the_runs_entry(tmp_path):
    """The run's entry reads problem.devices before the config checks: an interpolation that
    does not resolve (a resume's override) is still the checks' one line."""
    from neurorun import compose_config, run
    from neurorun.common.errors import ConfigError

    with pytest.raises(ConfigError, match=r"^problem.devices='\$\{nope\}' cannot be resolved"):
        run(compose_config(["debug=default", "problem.devices=${nope}"]), run_dir=tmp_path / "r")
