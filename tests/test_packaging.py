"""`pip install .` installs every subpackage and every config file (setuptools' own discovery
with pyproject.toml's settings, against what is on disk)."""

import tomllib
from pathlib import Path

from setuptools import find_packages

ROOT = Path(__file__).resolve().parents[1]
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_subpackage_is_found():
    found = set(find_packages(str(ROOT), **SETUPTOOLS["packages"]["find"]))
    on_disk = {".".join(init.parent.relative_to(ROOT).parts)
               for init in (ROOT / "neurorun").rglob("__init__.py")}
    assert on_disk <= found and "neurorun.conf" in found
    assert not {name for name in found if not name.startswith("neurorun")}  # tests, benchmarks


def test_every_config_file_is_package_data():
    conf = ROOT / "neurorun" / "conf"
    patterns = SETUPTOOLS["package-data"]["neurorun.conf"]
    shipped = {path for pattern in patterns for path in conf.glob(pattern)}
    assert set(conf.rglob("*.yaml")) == shipped


def test_the_core_install_holds_no_extra_and_every_extra_is_declared():
    import re

    from neurorun.common.extras import EXTRAS

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = {re.match(r"[\w-]+", requirement).group() for requirement in project["dependencies"]}
    assert core == {"torch", "numpy", "gymnasium", "hydra-core", "omegaconf", "rich"}
    optional = project["optional-dependencies"]
    assert set(EXTRAS) <= set(optional)  # each extra the code names, pip can install
    assert "neurorun[jax]" in optional["playground"]
    (everything,) = optional["all"]
    assert set(EXTRAS) <= set(re.search(r"\[(.*)\]", everything).group(1).split(","))


def test_the_public_names_load_when_used_and_import_neurorun_loads_no_torch():
    """`neurorun.run`, `neurorun.Callbacks` and `neurorun.compose_config` are the run loop's
    and the command's own (README); `import neurorun` alone loads no torch (it sets torch's
    allocator variable before torch is loaded), nor does naming an env's run folder or preset
    (the table of backends loads no env library)."""
    import subprocess
    import sys

    code = ("import sys, neurorun; from neurorun.envs.names import canonical_env_id; "
            "from neurorun.record.layout import run_dir_name; "
            "print(sorted({'torch', 'gymnasium', 'jax'} & set(sys.modules))); "
            "print(neurorun.run.__module__, neurorun.Callbacks.__module__, "
            "neurorun.compose_config.__module__)")
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True).stdout.split("\n")
    assert shown[:2] == ["[]", "neurorun.loop.runner neurorun.loop.callbacks neurorun.cli.app"]


def test_every_console_script_names_a_function():
    import importlib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    for name, target in scripts.items():
        module, _, function = target.partition(":")
        assert callable(getattr(importlib.import_module(module), function)), name
