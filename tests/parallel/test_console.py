"""ray's own messages reach the run's neurorun.log, not the console (docs/architecture.md: the
console shows neurorun's lines)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.extras("ray")

NEURORUN = shutil.which("neurorun", path=str(Path(sys.executable).parent)) or "neurorun"
NO_ROUTE = "Failed to determine local IP via external connectivity"  # network_util.cc


def test_rays_network_warning_reaches_the_log_not_the_console(namespace, tmp_path):
    """On a machine with no route out, ray's C++ core printed "Failed to determine
    local IP via external connectivity ..." on the console while ray started (it writes to file
    descriptor 2 before its log file is open). The run's own network namespace has no route
    out: only loopback."""
    run = tmp_path / "run"
    done = subprocess.run(namespace.command(
        [NEURORUN, "parallel=ray", "debug=default", "generations=1", f"hydra.run.dir={run}"]),
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert NO_ROUTE not in done.stdout + done.stderr
    assert f"run folder:  {run}" in done.stdout  # neurorun's own lines still show
    assert NO_ROUTE in (run / "neurorun.log").read_text()


def test_raylet_messages_are_log_records_without_colour_codes(monkeypatch, capsys, caplog):
    """Ray's driver printed "(raylet) A worker died ..." to the console with
    colour codes, plain mode or not; they are `raylet` log records (neurorun.log) instead."""
    from ray._private import worker

    from neurorun.parallel.cluster import route_raylet_messages

    monkeypatch.setattr(worker, "print_to_stdstream", worker.print_to_stdstream)  # restored
    route_raylet_messages()
    worker.print_to_stdstream({"lines": ["\x1b[33mA worker died or was killed\x1b[0m"],
                               "pid": "raylet", "is_err": False}, ignore_prefix=False)
    assert capsys.readouterr() == ("", "")
    (record,) = [r for r in caplog.records if r.name == "raylet"]
    assert record.getMessage() == "(raylet) A worker died or was killed"
