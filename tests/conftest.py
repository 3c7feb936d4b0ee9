"""Settings of the whole test session, and which tests the core install runs.

A test that needs extras of pyproject.toml (jax, ray, plots, envpool, optuna, mlflow, ...)
says so with the marker ``extras``: ``@pytest.mark.extras("jax")`` on the test, or
``pytestmark = pytest.mark.extras("jax")`` at the top of a module that needs it throughout.
The full suite (`make test`) runs every test, marked or not. With ``NEURORUN_CORE_ONLY=1``
(`make test-core`, in a venv holding the core install alone) the marked tests are deselected,
not skipped: a skip would read as a check that ran.
"""

import ast
import os
import shutil
import signal
import sys
import tomllib
from importlib.util import find_spec
from pathlib import Path

import pytest

from neurorun.common.extras import EXTRAS

# The signal tests start from the default dispositions: `nohup make test` would start the suite
# with SIGHUP ignored, and `make test &` from a script with SIGINT ignored; every run it starts
# would inherit and keep that (tests/cli/test_signals.py ignores them in a child on purpose).
signal.signal(signal.SIGHUP, signal.SIG_DFL)
signal.signal(signal.SIGINT, signal.default_int_handler)

# jax makes its CPU host devices once, when it starts: 4 of them let the tests run the compiled
# evaluation on 1, 2 or 4 devices (tests/problems/test_devices.py); what the user's XLA_FLAGS
# force is kept
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                               + " --xla_force_host_platform_device_count=4").strip()

CORE_ONLY = os.environ.get("NEURORUN_CORE_ONLY") == "1"
# the modules of the extras: the core job refuses to run where one is installed (it would not
# be testing the core alone); those of common/extras.py's rows, and of the extras that code
# checks for by itself (the trackers', Optuna's)
EXTRA_MODULES = (*sorted({module for modules in EXTRAS.values() for module in modules}),
                 "optuna", "mlflow", "wandb")


def pytest_configure(config):
    if CORE_ONLY:
        present = [module for module in EXTRA_MODULES if find_spec(module) is not None]
        if present:
            raise pytest.UsageError(f"NEURORUN_CORE_ONLY=1, but {', '.join(present)} is "
                                    "installed here: run it in the core venv (make test-core)")


def module_needs_extras(path: Path) -> bool:
    """Whether a test module's ``pytestmark`` holds the ``extras`` marker, read from its source
    (importing the module would import the extra)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(
        isinstance(node, ast.Assign)
        and any(isinstance(target, ast.Name) and target.id == "pytestmark"
                for target in node.targets)
        and any(isinstance(part, ast.Attribute) and part.attr == "extras"
                for part in ast.walk(node.value))
        for node in tree.body)


def pytest_ignore_collect(collection_path, config):
    if CORE_ONLY and collection_path.suffix == ".py" and collection_path.name.startswith("test_"):
        return module_needs_extras(collection_path) or None
    return None


def pytest_collection_modifyitems(config, items):
    declared = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())[
        "project"]["optional-dependencies"]
    for item in items:
        for marker in item.iter_markers("extras"):
            unknown = set(marker.args) - set(declared)
            if unknown:
                raise pytest.UsageError(f"{item.nodeid}: extras{marker.args} names "
                                        f"{sorted(unknown)}, not extras of pyproject.toml")
    if not CORE_ONLY:
        return
    deselected = [item for item in items if item.get_closest_marker("extras")]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if not item.get_closest_marker("extras")]


@pytest.fixture(scope="session")
def trained_once(tmp_path_factory) -> Path:
    """A debug run (PGPE with ClipUp, no observation normalization), 2 generations,
    checkpointed every generation: trained once for the tests that read or craft its files."""
    from neurorun.cli.app import compose_config
    from neurorun.loop.runner import run

    folder = tmp_path_factory.mktemp("trained") / "run"
    run(compose_config(["debug=default", "logger.console.quiet=true"]), run_dir=folder)
    return folder


@pytest.fixture
def trained(trained_once, tmp_path) -> Path:
    """A copy of the trained run in tmp_path/run, this test's to change."""
    return Path(shutil.copytree(trained_once, tmp_path / "run"))


def pytest_sessionfinish(session, exitstatus):
    """A program compiled ahead on a thread and never called (a test's last evaluation) would
    be stopped inside XLA by the interpreter's exit, which aborts the process: wait for it."""
    compiling = sys.modules.get("neurorun.problems.jax.compiling")
    if compiling is not None:
        compiling.wait_for_compiles()
