"""The built wheel, installed into a fresh venv, runs `neurorun` from any folder."""

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def check(command, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f"{command}\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
    return result


@pytest.mark.slow
def test_wheel_in_a_fresh_venv_runs_from_tmp(tmp_path):
    dist, venv, work = tmp_path / "dist", tmp_path / "venv", tmp_path / "work"
    work.mkdir()
    check([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation",
           "--quiet", "-w", str(dist)], cwd=tmp_path)
    (wheel,) = dist.glob("neurorun-*.whl")
    check([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    check([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
           "--no-deps", "--no-index", str(wheel)])
    # Reuse this environment's dependencies (offline, fast): a plain path line, so the
    # editable install of the source tree living there is not activated.
    site = check([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"])
    Path(site.stdout.strip(), "_neurorun_test_deps.pth").write_text(
        sysconfig.get_path("purelib") + "\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    where = check([str(python), "-c", "import neurorun, neurorun.conf as c; "
                   "print(neurorun.__file__); print(c.__file__)"], cwd=work, env=env)
    assert all(str(venv) in line for line in where.stdout.split())
    info = check([str(venv / "bin" / "neurorun"), "--info", "searchpath"], cwd=work, env=env)
    assert "pkg://neurorun.conf" in info.stdout
    job = check([str(venv / "bin" / "neurorun"), "--cfg", "job", "env=brax::humanoid"],
                cwd=work, env=env)
    assert "id: brax::humanoid" in job.stdout and "backend: spring" in job.stdout
    check([str(venv / "bin" / "neurorun"), "debug=default"], cwd=work, env=env)
    (run_dir,) = (work / "runs" / "CartPole-v1" / "pgpe").iterdir()
    assert (run_dir / "checkpoints" / "best.pkl").is_file()
