"""A missing extra is one line, naming its missing packages and the pip command, where it is
first needed: the config check of a run (before anything starts), `make_env` for library use,
and the tools.

A module is made missing the way Python's import system reads it, `sys.modules[name] = None`
(`import name` raises ModuleNotFoundError, `importlib.util.find_spec` returns None). So these
tests hold in the full install and in the core alone (`make test-core`), where the packages
are not there at all and the CLI test runs the console script itself.
"""

import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

from neurorun.cli.app import compose_config
from neurorun.common import extras
from neurorun.common.errors import ConfigError
from neurorun.common.extras import MissingExtraError, require
from neurorun.config.checks import validate_config
from neurorun.envs import batched_jax_env, env_spaces, make_env, resolve_backend
from neurorun.tools import export, plot

BRAX_LINE = "env=brax::ant needs jax and brax: pip install 'neurorun[jax]'"


def hide(monkeypatch, *modules):
    for module in modules:
        monkeypatch.setitem(sys.modules, module, None)


def test_require_names_only_the_missing_modules(monkeypatch):
    monkeypatch.setitem(extras.EXTRAS, "demo", ("sys", "no_such_module_a", "no_such_module_b"))
    with pytest.raises(MissingExtraError) as caught:
        require("demo", "demo=on")
    assert str(caught.value) == ("demo=on needs no_such_module_a and no_such_module_b: "
                                 "pip install 'neurorun[demo]'")
    assert isinstance(caught.value, ImportError)  # what library callers catch
    monkeypatch.setitem(extras.EXTRAS, "demo", ("sys",))
    require("demo", "demo=on")  # installed: nothing to say


def test_a_brax_env_without_jax_is_one_line_wherever_it_is_made(monkeypatch):
    hide(monkeypatch, "jax", "brax")
    for make in (lambda: make_env("brax::ant", 2), lambda: env_spaces("brax::ant"),
                 lambda: batched_jax_env("brax::ant")):
        with pytest.raises(MissingExtraError) as caught:
            make()
        assert str(caught.value) == BRAX_LINE


def test_the_config_check_refuses_an_env_or_ray_without_its_extra(monkeypatch):
    hide(monkeypatch, "jax", "brax", "mujoco_playground", "ray")
    playground = ("env=playground::CheetahRun needs jax, brax and mujoco_playground: "
                  "pip install 'neurorun[playground]'")
    ray = "parallel=ray needs ray: pip install 'neurorun[ray]'"
    for overrides, line in ((["env=brax::ant"], BRAX_LINE),
                            (["env=playground::CheetahRun"], playground),
                            (["parallel=ray"], ray)):
        with pytest.raises(ConfigError) as caught:
            validate_config(compose_config(["debug=default", *overrides]))
        assert str(caught.value) == line


def test_envpool_without_its_extra(monkeypatch):
    hide(monkeypatch, "envpool")
    with pytest.raises(MissingExtraError, match=r"^env=envpool::Hopper-v5 needs envpool: "
                                                r"pip install 'neurorun\[envpool\]'$"):
        make_env("envpool::Hopper-v5", 2)
    assert resolve_backend("Hopper-v5", "auto") == "Hopper-v5"  # a bare id falls back
    with pytest.raises(MissingExtraError, match=r"^env.backend=envpool needs envpool"):
        resolve_backend("Hopper-v5", "envpool")


def test_neurorun_plot_without_matplotlib(monkeypatch, tmp_path, capsys):
    hide(monkeypatch, "matplotlib")
    assert plot.main([str(tmp_path), "--out", str(tmp_path / "curves.png")]) == 2
    assert capsys.readouterr().err == ("neurorun-plot: error: plotting needs matplotlib: "
                                       "pip install 'neurorun[plots]'\n")


def test_neurorun_export_to_onnx_without_its_packages(monkeypatch, tmp_path, capsys):
    hide(monkeypatch, "onnx", "onnxruntime")
    out = tmp_path / "policy.onnx"
    assert export.main([str(tmp_path), "--out", str(out)]) == 2
    assert capsys.readouterr().err == ("neurorun-export: error: --format onnx needs onnx and "
                                       "onnxruntime: pip install 'neurorun[export]'\n")
    assert not out.exists()


def neurorun_without(modules, *args, cwd):
    """`neurorun *args` where ``modules`` cannot be imported: the console script itself where
    they are not installed (the core alone), else Python started with them hidden."""
    if all(find_spec(module) is None for module in modules):
        command = [str(Path(sys.executable).with_name("neurorun"))]
    else:
        command = [sys.executable, "-c", f"import sys; sys.modules.update(dict.fromkeys("
                   f"{modules!r})); from neurorun.cli.app import main; main()"]
    return subprocess.run([*command, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def test_the_command_line_says_what_to_install_before_anything_starts(tmp_path):
    result = neurorun_without(("jax", "brax"), "env=brax::ant", "hydra.run.dir=run",
                              cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == f"neurorun: config error: {BRAX_LINE}"
    assert "Traceback" not in result.stderr and not (tmp_path / "run").exists()
