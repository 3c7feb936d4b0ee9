"""The trust rules: no code from any file neurorun reads, no write outside the run folder.

Every file neurorun reads is data: a checkpoint's .pt/.json, a .pkl (only with --trust-pickle),
state.pt, a run folder's saved config, its metrics and its lock. Code named in such a file (a
`pkg.module:Name` network or env factory, a gymnasium id `module:Name-v0`, a ray runtime_env or
cluster address) is imported only when the command line says so: `--trust-code` for the
tools, `trust_code=true` for `resume=`. A "trap" module, importable
from the test's folder, writes a marker file when it is imported and when its factory is called:
the marker tells whether any of its code ran.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf
from tools.helpers import PLOT_TOOL, rows, save_checkpoint, write_run

from neurorun.cli.app import compose_config
from neurorun.common.user_code import UntrustedCodeError, names_code
from neurorun.config.resume import load_run_config
from neurorun.tools import evaluate, render
from tests.record.crafted import craft_state, set_key

TRAP = '''
import pathlib
from torch import nn

MARKER = pathlib.Path(__file__).with_name("ran")
MARKER.write_text("imported")


def net(obs_length, act_length):
    MARKER.write_text("called")
    return nn.Linear(obs_length, act_length)


def make_env(num_envs, **env_config):
    MARKER.write_text("called")
    raise RuntimeError("a trap, not an env")
'''


@pytest.fixture
def trap(tmp_path, monkeypatch):
    """A module `nr_trap` on sys.path (and PYTHONPATH); returns the marker it writes."""
    folder = tmp_path / "code"
    folder.mkdir()
    (folder / "nr_trap.py").write_text(TRAP)
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(folder), os.environ.get(
        "PYTHONPATH", "")]))
    yield folder / "ran"
    sys.modules.pop("nr_trap", None)


def _craft_json(run: Path, **changes) -> Path:
    path = run / "checkpoints" / "best.json"
    meta = json.loads(path.read_text())
    path.write_text(json.dumps({**meta, **changes}))
    return path


def _tool(tool, run: Path, *args: str) -> int:
    if tool is render:
        return render.main([str(run), "--out", str(run.parent / "out.gif"), "--max-steps", "5",
                            *args])
    return evaluate.main([str(run), "--episodes", "1", *args])


# ----- a checkpoint's .json -----
@pytest.mark.parametrize("tool", [evaluate, render], ids=["eval", "render"])
@pytest.mark.parametrize("changes", [
    {"architecture": "os:system", "network_args": {"command": "touch {marker}"}},
    {"architecture": "nr_trap:net"},
    {"env": "nr_trap:make_env"},
    {"env": "nr_trap:Trap-v0"},  # gymnasium imports `nr_trap` for an id `nr_trap:Trap-v0`
    {"env": "gym::nr_trap:Trap-v0"},
], ids=["os-system", "network-factory", "env-factory", "gym-module-id", "gym-prefixed"])
def test_code_named_in_a_checkpoint_json_is_not_run_without_trust_code(
        tool, changes, trap, tmp_path, capsys):
    run = save_checkpoint(tmp_path / "run")
    changes = json.loads(json.dumps(changes).replace("{marker}", str(trap)))
    source = _craft_json(run, **changes)
    assert _tool(tool, run) == 2
    assert not trap.exists()  # neither imported nor called
    err = capsys.readouterr().err
    named = changes.get("architecture", changes.get("env"))
    assert err.count("\n") == 1 and str(source) in err
    assert repr(named) in err and "--trust-code" in err


def test_trust_code_imports_the_factory_the_json_names(trap, tmp_path, capsys):
    run = save_checkpoint(tmp_path / "run")
    _craft_json(run, architecture="nr_trap:net")
    assert evaluate.main([str(run), "--episodes", "1", "--trust-code", "--json"]) == 0
    assert trap.read_text() == "called"  # net() built Linear(4, 2): the checkpoint's 10 weights
    assert json.loads(capsys.readouterr().out)["episodes"][0]["length"] > 0


def test_env_given_on_the_command_line_replaces_the_one_the_json_names(trap, tmp_path):
    run = save_checkpoint(tmp_path / "run")
    _craft_json(run, env="nr_trap:make_env")
    assert evaluate.main([str(run), "--episodes", "1", "--env", "CartPole-v1"]) == 0
    assert not trap.exists()


@pytest.mark.parametrize(("spec", "what", "expected"), [
    ("Linear(obs_length, act_length)", "network", False),
    ("Apply('x[:, :2]') >> Linear(2, act_length)", "network", False),  # a ':' in a string
    ("pkg.mod:Net", "network", True),
    ("CartPole-v1", "env", False),
    ("gym::CartPole-v1", "env", False),
    ("envpool::Hopper-v5", "env", False),
    ("brax::humanoid", "env", False),
    ("playground::CheetahRun", "env", False),
    ("pkg.mod:make_env", "env", True),
    ("ale_py:ALE/Pong-v5", "env", True),  # gymnasium imports ale_py first
    ("gym::ale_py:ALE/Pong-v5", "env", True),
])
def test_what_names_code(spec, what, expected):
    assert names_code(spec, what) is expected


# ----- a run folder's saved config on resume= -----
def _saved_run(folder: Path, **changes) -> Path:
    """A run folder with a saved config (the debug run's) and `changes` (key: value) in it."""
    config = compose_config(["debug=default"])
    for key, value in changes.items():
        OmegaConf.update(config, key, value, force_add=True)
    (folder / ".hydra").mkdir(parents=True)
    OmegaConf.save(config, folder / ".hydra" / "config.yaml")
    return folder


@pytest.mark.parametrize("changes", [
    {"network.spec": "os:system", "network.network_args": {"command": "touch x"}},
    {"env.id": "nr_trap:make_env"},
    {"env.id": "nr_trap:Trap-v0"},
    {"parallel.actor_config": {"runtime_env": {"pip": ["evil"]}}},
    {"parallel.address": "203.0.113.9:6379"},
    {"logger.mlflow.tracking_uri": "http://203.0.113.9:5000"},
], ids=["network-factory", "env-factory", "gym-module-id", "runtime-env", "ray-address",
        "mlflow-server"])
def test_a_saved_config_naming_code_is_refused_on_resume(changes, tmp_path):
    run = _saved_run(tmp_path / "run", **changes)
    with pytest.raises(UntrustedCodeError) as refused:
        load_run_config(run, ["generations=4"])
    message = str(refused.value)
    key, value = next(iter(changes.items()))
    assert "\n" not in message and str(run / ".hydra" / "config.yaml") in message
    assert key.split(".")[0] in message and "trust_code=true" in message


def test_the_saved_config_cannot_trust_itself(tmp_path):
    run = _saved_run(tmp_path / "run", **{"network.spec": "nr_trap:net", "trust_code": True})
    with pytest.raises(UntrustedCodeError):
        load_run_config(run, [])
    assert load_run_config(run, ["trust_code=true"]).network.spec == "nr_trap:net"


@pytest.mark.parametrize("text", ["no", "false ", "0", "off"])
def test_trust_code_given_as_text_trusts_nothing(text, tmp_path):
    """`trust_code=no` is text, and text is truthy; only true trusts."""
    run = _saved_run(tmp_path / "run", **{"network.spec": "nr_trap:net"})
    with pytest.raises(UntrustedCodeError):
        load_run_config(run, [f"trust_code='{text}'"])


def test_code_the_command_line_names_on_resume_is_the_users(tmp_path):
    run = _saved_run(tmp_path / "run", **{"parallel.address": "203.0.113.9:6379"})
    assert load_run_config(run, ["parallel.address=auto"]).parallel.address == "auto"


def test_a_saved_network_string_and_env_id_resume_without_trust(tmp_path):
    run = _saved_run(tmp_path / "run", **{"network.spec": "Linear(obs_length, 8) >> Tanh() "
                                          ">> Linear(8, act_length)", "env.id": "brax::ant"})
    assert load_run_config(run, []).env.id == "brax::ant"


def _neurorun(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    script = Path(sys.executable).with_name("neurorun")
    return subprocess.run([str(script), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def test_resuming_a_run_of_ones_own_module_asks_once_then_runs_it(trap, tmp_path):
    first = _neurorun("debug=default", "network.spec=nr_trap:net", "hydra.run.dir=run",
                      cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    trap.unlink()
    refused = _neurorun("resume=run", "generations=3", cwd=tmp_path)
    assert refused.returncode == 2 and not trap.exists()
    assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
    assert "network.spec='nr_trap:net'" in refused.stderr
    assert "neurorun resume=run trust_code=true" in refused.stderr  # layout.resume_command
    resumed = _neurorun("resume=run", "generations=3", "trust_code=true", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert trap.read_text() == "called"
    lines = (tmp_path / "run" / "metrics.csv").read_text().splitlines()
    assert len(lines) == 1 + 3  # the header and generations 1-3
    saved = OmegaConf.load(tmp_path / "run" / ".hydra" / "config.yaml")
    assert saved.trust_code is False  # the next resume asks again


# ----- the tools that read a run folder's metrics and saved config -----
@pytest.mark.parametrize("tool", [PLOT_TOOL, "compare"])
def test_plot_and_compare_read_a_folder_naming_code_as_data(tool, trap, tmp_path):
    from neurorun.tools import compare, plot

    run = write_run(tmp_path / "run", rows([1.0, 2.0]), ["network.spec=nr_trap:net"])
    (run / ".hydra" / "config.yaml").write_text(
        "env: {id: 'nr_trap:make_env'}\nnetwork: {spec: 'nr_trap:net'}\n")
    if tool == "plot":
        assert plot.main([str(run), "--out", str(tmp_path / "curve.png")]) == 0
    else:
        assert compare.main([str(run)]) == 0
    assert not trap.exists()


# ----- pickles: a .pkl or state.pt never unpickles code unless trusted -----
class _CreatesAFile:
    """Unpickling this runs os.system: what a crafted pickle in a shared folder could do."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        import os

        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize("where", ["file", "folder"])
def test_pickles_load_only_with_trust_pickle(tmp_path, where):
    import pickle

    from neurorun.tools import loading
    from neurorun.tools.common import ToolError

    marker = tmp_path / "owned"
    folder = tmp_path / "shared" / "checkpoints"
    folder.mkdir(parents=True)
    (folder / "best.pkl").write_bytes(pickle.dumps({"policy": _CreatesAFile(marker)}))
    path = folder / "best.pkl" if where == "file" else tmp_path / "shared"
    with pytest.raises(ToolError, match="runs any code it holds.*--trust-pickle"):
        loading.load_policy(path)
    assert not marker.exists()
    with pytest.raises(ToolError):  # trusted: it runs (and then is not a policy)
        loading.load_policy(path, trust_pickle=True)
    assert marker.exists()


def test_resume_never_unpickles_code_from_state_pt(tmp_path):
    import torch

    from neurorun.common.errors import ConfigError
    from neurorun.loop.runner import run

    tiny = compose_config(["debug=default", "logger.console.quiet=true", "generations=1"])
    run(tiny, run_dir=tmp_path)
    marker = tmp_path / "owned"
    state = torch.load(tmp_path / "checkpoints" / "state.pt", weights_only=True)
    state["status"] = _CreatesAFile(marker)
    torch.save(state, tmp_path / "checkpoints" / "state.pt")
    with pytest.raises(ConfigError, match="cannot be loaded as plain data.*could run code"):
        run(load_run_config(tmp_path, ["generations=2"]), run_dir=tmp_path)
    assert not marker.exists()


# ----- no write follows a symbolic link out of the run folder -----
def _link_out(run: Path, name: str) -> tuple[Path, dict[str, bytes]]:
    """Replace `name` in `run` by a link to a copy outside the folder (a file: its bytes and 200
    lines more, which a resume would cut and append to); returns the outside path and its
    files' bytes."""
    import shutil

    inside, outside = run / name, run.parent / "elsewhere" / name.replace("/", "_")
    outside.parent.mkdir(exist_ok=True)
    if inside.is_dir():
        shutil.copytree(inside, outside)
        shutil.rmtree(inside)
    else:
        own = inside.read_bytes() if inside.is_file() else b""
        outside.write_bytes(own + b"".join(b"someone else's line %d\n" % i for i in range(200)))
        inside.unlink(missing_ok=True)
    inside.symlink_to(outside)
    files = [outside] if outside.is_file() else sorted(p for p in outside.rglob("*"))
    return outside, {str(p): p.read_bytes() for p in files if p.is_file()}


@pytest.mark.parametrize("name", ["metrics.csv", ".neurorun.lock"])
def test_resume_refuses_a_folder_whose_written_files_link_elsewhere(trained, name):
    outside, before = _link_out(trained, name)
    result = _neurorun(f"resume={trained}", "generations=4", cwd=trained.parent)
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert f"{name} -> {outside}" in result.stderr and "Fix:" in result.stderr
    assert {str(p): Path(p).read_bytes() for p in before} == before  # byte-identical


@pytest.mark.parametrize("name", ["metrics.csv", "metrics.jsonl", ".neurorun.lock",
                                  "neurorun.log", "checkpoints", ".hydra",
                                  ".hydra/config.yaml", "tensorboard"])
def test_a_run_refuses_links_where_it_writes_before_writing_anything(trained, name):
    from neurorun.common.errors import ConfigError
    from neurorun.loop.runner import run

    config = load_run_config(trained, ["generations=4"])
    outside, before = _link_out(trained, name)
    with pytest.raises(ConfigError) as refused:
        run(config, run_dir=trained)
    assert "\n" not in str(refused.value) and f"{name} -> {outside}" in str(refused.value)
    assert {p: Path(p).read_bytes() for p in before} == before
    assert (trained / name).is_symlink()


def test_metric_files_never_open_through_a_link(tmp_path):
    from neurorun.loggers.files import MetricsFiles

    outside = tmp_path / "outside.csv"
    outside.write_text("keep\n")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "metrics.csv").symlink_to(outside)
    with pytest.raises(OSError):
        MetricsFiles(tmp_path / "run")
    assert outside.read_text() == "keep\n"


def test_a_checkpoint_written_over_a_link_replaces_the_link_not_its_target(tmp_path):
    from neurorun.common.atomic import atomic_write_text

    outside = tmp_path / "outside.json"
    outside.write_text("keep\n")
    (tmp_path / "best.json").symlink_to(outside)
    atomic_write_text("new\n", tmp_path / "best.json")  # a rename replaces the link itself
    assert outside.read_text() == "keep\n"
    assert not (tmp_path / "best.json").is_symlink()
    assert (tmp_path / "best.json").read_text() == "new\n"


# ----- more crafted state.pt files and saved configs -----
@pytest.mark.parametrize(("key", "value", "named"), [
    ("generation", -5, "generation"),
    ("generation", 100, "generation"),
    ("generation", 10**30, "generation"),
    ("generation", True, "generation"),
    ("algorithm/generation", -3, "algorithm.generation"),
    ("algorithm/search/mu", lambda mu: mu[:7].clone(), "algorithm.search.mu"),
    ("algorithm/search/mu", "abc", "algorithm.search.mu"),
    ("algorithm/search/sigma", lambda sigma: -sigma, "algorithm.search.sigma"),
    ("algorithm/search/sigma", lambda sigma: sigma * 0, "algorithm.search.sigma"),
    ("algorithm/algorithm", "snes", "algorithm.algorithm"),
    ("algorithm/search/optimizer/steps", 10**400, "algorithm.search.optimizer.steps"),
    ("algorithm/search/optimizer/steps", -1, "algorithm.search.optimizer.steps"),
    # format 2 always saves ClipUp's step count (format 1 may lack it: record/format.py)
    ("algorithm/search/optimizer", lambda saved: {k: v for k, v in saved.items() if k != "steps"},
     "algorithm.search.optimizer"),
    ("problem/interaction_count", -1000, "problem.interaction_count"),
    ("problem/interaction_count", 10**40, "problem.interaction_count"),
    ("problem/interaction_count", lambda count: count + 7, "status.total_interaction_count"),
    ("elapsed_s", -1e9, "elapsed_s"),
    ("elapsed_s", float("nan"), "elapsed_s"),
    ("restarts", -7, "restarts"),
    ("best/score", float("nan"), "best.score"),
    ("best/score", float("inf"), "best.score"),
    ("best/solution", lambda solution: solution[:3].clone(), "best.solution"),
    ("loggers/metrics.csv", -5, "loggers['metrics.csv']"),
    ("loggers/metrics.jsonl", "x", "loggers['metrics.jsonl']"),
    ("loggers/rows", "2", "loggers.rows"),
    # random generators: states their own libraries refuse to load
    ("rng/torch", lambda state: state * 0, "rng.torch"),  # torch: "Invalid mt19937 state"
    ("rng/python", lambda state: [state[0], state[1][:2], state[2]], "rng.python"),
    ("rng/python", lambda state: [*state[:2], "abc"], "rng.python[2]"),  # random.gauss's next
    ("rng/numpy/kind", "XYZ", "rng.numpy"),
    ("rng/numpy/pos", 10**6, "rng.numpy.pos"),  # numpy takes it, then reads past its keys
    ("rng/cuda", "x", "rng.cuda"),
    ("problem/rng/bit_generator", "MT19937", "problem.rng"),  # the problem's is a PCG64
    ("problem/noise_rng", lambda state: state * 0, "problem.noise_rng"),
    ("algorithm/rng", lambda state: state[:7].clone(), "algorithm.rng"),
    ("algorithm/pending", [torch.zeros(3, 10)], "algorithm.pending"),  # saved between gens
    # the last generation's summary: what the status shows until the next generation
    ("algorithm/last/popsize", -3, "algorithm.last.popsize"),
    ("algorithm/last/mean_eval", float("nan"), "algorithm.last.mean_eval"),
    ("algorithm/last", {"popsize": 4}, "algorithm.last.mean_eval"),
    # a policy file's rules: no sums where nothing was counted
    ("best/obs_stats", {"size": 4, "min_variance": 0.01, "count": torch.tensor(0.0).double(),
                        "sum": torch.ones(4).double(), "sum_of_squares": torch.ones(4).double()},
     "best.obs_stats.count"),
    ("best/obs_stats", {"size": 2, "min_variance": 0.01, "count": torch.tensor(2.5).double(),
                        "sum": torch.ones(2).double(), "sum_of_squares": torch.ones(2).double()},
     "best.obs_stats.count"),
    ("best/obs_stats", {"size": 2, "min_variance": 0.01, "count": torch.tensor(2.0).double(),
                        "sum": torch.full((2,), 4.0).double(),
                        "sum_of_squares": torch.zeros(2).double()},
     "best.obs_stats.sum_of_squares"),  # a variance of 0 - 2**2
    # no variance floor a run saves (a run's is a finite number >= 0)
    *(("best/obs_stats", {"size": 2, "min_variance": floor, "count": torch.tensor(2.0).double(),
                          "sum": torch.ones(2).double(), "sum_of_squares": torch.ones(2).double()},
       "best.obs_stats.min_variance") for floor in (-1.0, float("nan"))),
], ids=lambda v: str(v)[:20] if not callable(v) else "fn")
def test_resume_refuses_a_state_whose_content_does_not_fit(trained, key, value, named):
    from neurorun.common.errors import ConfigError
    from neurorun.loop.runner import run

    path = craft_state(trained, set_key(key, value))
    names = ("metrics.csv", "metrics.jsonl")
    metrics = {name: (trained / name).read_bytes() for name in names}
    with pytest.raises(ConfigError) as refused:
        run(load_run_config(trained, ["generations=3"]), run_dir=trained)
    message = str(refused.value)
    assert "\n" not in message and str(path) in message and f" {named} is " in message
    assert {name: (trained / name).read_bytes() for name in metrics} == metrics


def test_a_state_the_runner_wrote_without_a_best_resumes(trained):
    """A run whose center evaluations were never finite saves best.score None: not refused."""
    from neurorun.loop.runner import run

    craft_state(trained, set_key("best", {"solution": None, "score": None,
                                             "generation": 0, "obs_stats": None}))
    result = run(load_run_config(trained, ["generations=3", "logger.console.quiet=true"]),
                 run_dir=trained)
    assert result["generation"] == 3


def test_a_resume_that_changes_clipups_settings_steps_with_them(trained):
    """A resume may override the center's step settings: the optimizer took the saved ones
    (the state holds them), so the override was recorded in the config and ignored."""
    import torch

    from neurorun.loop.runner import run

    saved = torch.load(trained / "checkpoints" / "state.pt", weights_only=True)
    assert saved["algorithm"]["search"]["optimizer"]["max_speed"] != 0.05
    run(load_run_config(trained, ["generations=3", "logger.console.quiet=true",
                                       "algo.center_learning_rate=0.02",
                                       "algo.optimizer_config.max_speed=0.05"]),
        run_dir=trained)
    optimizer = torch.load(trained / "checkpoints" / "state.pt",
                           weights_only=True)["algorithm"]["search"]["optimizer"]
    assert (optimizer["lr"], optimizer["max_speed"]) == (0.02, 0.05)
    assert float(optimizer["velocity"].norm()) <= 0.05 * (1 + 1e-6)  # float32


def test_a_state_of_the_wrong_shape_is_one_line_without_a_resume_hint(trained):
    path = craft_state(trained, set_key("algorithm/search/mu", lambda mu: mu[:7].clone()))
    result = _neurorun(f"resume={trained}", "generations=3", cwd=trained.parent)
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert str(path) in result.stderr and "algorithm.search.mu" in result.stderr
    assert "resume=" not in result.stderr.replace(f"resume={trained}", "")


@pytest.mark.parametrize(("key", "value", "named"), [
    ("rng/torch", lambda state: state * 0, "rng.torch"),
    ("algorithm/pending", [torch.zeros(3, 10)], "algorithm.pending"),
])
def test_a_crafted_generator_state_is_one_line_before_the_run_goes_on(trained, key, value,
                                                                      named):
    """Such a state failed mid-resume: "the run failed: RuntimeError: Invalid mt19937 state",
    exit 1, with the run's files opened."""
    path = craft_state(trained, set_key(key, value))
    before = _run_files(trained)
    result = _neurorun(f"resume={trained}", "generations=3", cwd=trained.parent)
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert f"{path}: {named} is " in result.stderr
    assert _run_files(trained) == before


def _run_files(run: Path) -> dict[Path, bytes | None]:
    """What the run wrote (None: a folder), but the lock and Hydra's own files (its
    `.hydra/resumed_<date>/` and log, written before the run takes the lock)."""
    return {name: name.read_bytes() if name.is_file() else None for name in run.rglob("*")
            if name.parts[len(run.parts)] not in (".hydra", ".neurorun.lock", "neurorun.log")}


BOMB = "".join(["env:\n  id: CartPole-v1\nnetwork_args:\n  a0: &a0 [", ",".join("x" * 10), "]\n",
                *(f"  a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 9))])


def test_a_saved_config_with_yaml_aliases_is_refused_at_once(tmp_path):
    run = _saved_run(tmp_path / "run")
    saved = run / ".hydra" / "config.yaml"
    saved.write_text(BOMB)  # 10**9 leaves once expanded
    result = _neurorun(f"resume={run}", "generations=3", cwd=tmp_path)
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stderr.count("\n") == 1 and str(saved) in result.stderr
    assert "alias" in result.stderr


@pytest.mark.parametrize("tool", ["compare", PLOT_TOOL, "eval", "render"])
def test_the_tools_refuse_a_saved_config_with_aliases(tool, tmp_path, capsys):
    from neurorun.tools import compare, plot

    run = write_run(tmp_path / "run", rows([1.0, 2.0]), [])
    saved = run / ".hydra" / "config.yaml"
    saved.write_text("a: &x [1, 2]\nb: *x\nenv: {id: CartPole-v1}\n")
    save_checkpoint(run)  # eval and render refuse it too: its settings would be left out
    code = (plot.main([str(run), "--out", str(tmp_path / "c.png")]) if tool == "plot"
            else compare.main([str(run)]) if tool == "compare"
            else _tool({"eval": evaluate, "render": render}[tool], run))
    err = capsys.readouterr().err
    assert code == 2 and str(saved) in err and "alias" in err


@pytest.mark.parametrize(("content", "said"), [
    (b"", "is empty"),
    (b"# nothing\n", "is empty"),
    (b"- env\n- algo\n", "is not a mapping"),
    (b"just words\n", "holds the single value 'just words', where a mapping or a list belongs"),
    (b"\x94\xff random", "is not UTF-8 text"),
])
def test_a_saved_config_that_is_no_config_is_named(content, said, tmp_path):
    run = _saved_run(tmp_path / "run")
    saved = run / ".hydra" / "config.yaml"
    saved.write_bytes(content)
    with pytest.raises(ValueError) as refused:
        load_run_config(run, ["generations=3"])
    message = str(refused.value)
    assert "\n" not in message and str(saved) in message and said in message
    assert "generations=3" not in message  # not the override's fault


@pytest.mark.parametrize("key", ["algo.popsize", "env.env_config.secret"])
def test_a_saved_config_does_not_read_the_environment(key, tmp_path, monkeypatch):
    monkeypatch.setenv("NR_PROBE_SECRET", "hunter2")
    run = _saved_run(tmp_path / "run", **{key: "${oc.env:NR_PROBE_SECRET}"})
    with pytest.raises(ValueError) as refused:
        load_run_config(run, ["generations=3"])
    message = str(refused.value)
    assert "\n" not in message and "hunter2" not in message
    assert key in message and str(run / ".hydra" / "config.yaml") in message
    assert "trust_code=true" in message
    trusted = load_run_config(run, ["trust_code=true"])
    assert OmegaConf.select(trusted, key) == "hunter2"
    own = load_run_config(run, [f"{key}=12"])  # given on the command line: the user's
    assert OmegaConf.select(own, key) == 12


def test_the_command_line_may_still_read_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("NR_PROBE_POPSIZE", "12")
    run = _saved_run(tmp_path / "run")
    config = load_run_config(run, ["algo.popsize=${oc.env:NR_PROBE_POPSIZE}"])
    assert int(config.algo.popsize) == 12


def test_compare_does_not_print_an_environment_variable_a_config_names(tmp_path, capsys,
                                                                       monkeypatch):
    from neurorun.tools import compare

    monkeypatch.setenv("NR_PROBE_SECRET", "hunter2")
    for name, env in (("a", "CartPole-v1"), ("b", "${oc.env:NR_PROBE_SECRET}")):
        run = write_run(tmp_path / "runs" / name, rows([1.0, 2.0]), [])
        (run / ".hydra" / "config.yaml").write_text(f"env: {{id: '{env}'}}\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert compare.main([str(tmp_path / "runs")]) == 0  # its env is unknown, not read
    shown = "".join(capsys.readouterr()) + " ".join(str(w.message) for w in caught)
    assert "hunter2" not in shown


@pytest.mark.parametrize("text", ['"\\e]0;title\\a"', '"CartPole-v1\\e[2J"', '"a\\x9bb"',
                                  '"\\r"'])
def test_a_saved_config_holding_terminal_control_characters_is_refused(text, tmp_path):
    """YAML's escapes (\\e is ESC) put terminal escape sequences into a saved
    config's values, which resume's messages then printed as they were."""
    from neurorun.config.saved_yaml import SavedFileError

    run = _saved_run(tmp_path / "run")
    config = run / ".hydra" / "config.yaml"
    config.write_text(config.read_text() + f"note: {text}\n")
    with pytest.raises(SavedFileError) as refused:
        load_run_config(run, [])
    message = str(refused.value)
    assert message.startswith(f"{str(config)!r} holds a terminal control character (")
    assert "\x1b" not in message and "\r" not in message and "\x9b" not in message
    config.write_text(config.read_text().replace(f"note: {text}\n", 'note: "tab\\there"\n'))
    assert load_run_config(run, []).note == "tab\there"  # tabs and newlines are text
