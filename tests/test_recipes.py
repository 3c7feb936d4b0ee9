"""docs/architecture.md's recipes, followed at run time: a tiny algorithm, env backend and logger
are registered the way the recipes say (their row put in the table, their YAML where Hydra
finds it) and a 2-generation run uses each. Without its row, each is refused or never called."""

import csv
import inspect
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
from gymnasium import spaces

from neurorun.algorithms import ALGORITHMS
from neurorun.algorithms.gaussian import SeparableSearch
from neurorun.algorithms.options import SearchOptions
from neurorun.cli.app import compose_config
from neurorun.common.errors import ConfigError
from neurorun.common.settings import setting
from neurorun.envs import backends
from neurorun.envs.base import TorchVecEnv
from neurorun.loggers import LOGGERS, Logger
from neurorun.loop.callbacks import Callbacks
from neurorun.loop.runner import run

ROOT = Path(__file__).resolve().parents[1]

# the files a new part touches, in docs/architecture.md's recipes too (<name>: the part's)
RECIPE_FILES = {
    "algorithm": ("neurorun/algorithms/<name>.py", "neurorun/algorithms/__init__.py",
                  "neurorun/conf/algo/<name>.yaml", "README.md"),
    "env backend": ("neurorun/envs/<prefix>_env.py", "neurorun/envs/backends.py"),
    "logger": ("neurorun/loggers/<name>.py", "neurorun/loggers/__init__.py",
               "neurorun/conf/logger/default.yaml"),
}

# ----- the recipe's algorithm: one file (here, this module) -------------------------------


@dataclass(frozen=True)
class TinyOptions(SearchOptions):
    """No options of its own: SearchOptions' start, adaptive and sampling groups."""


class TinySearch(SeparableSearch):
    """Samples ``mu + sigma * eps``; the center jumps to the generation's best sample, the
    stdev stays ``stdev_init``."""

    name = "tiny"
    Options = TinyOptions
    SUMS = {"best": ("eps",)}  # the one sum its update reads: sum_i best_i eps_i

    def _learning_rates(self) -> tuple[float, float]:
        return 1.0, 1.0  # no step options: the center jumps

    def weights(self, fitness: torch.Tensor, norms: torch.Tensor | None) -> dict:
        best = torch.zeros_like(fitness)
        best[fitness.argmax()] = 1.0
        return {"best": best}

    def update(self, sums: dict, weights: dict, fitness: torch.Tensor) -> None:
        self.mu = self.mu + self.sigma * sums["best.eps"]


ALGO_YAML = """\
# A random search whose center jumps to each generation's best sample (tests/test_recipes.py).
name: tiny  # which algorithm (a key of neurorun.algorithms.ALGORITHMS)
popsize: 10  # solutions per generation
stdev_init: 0.5  # the per-parameter stdev, fixed
radius_init: null  # (exclusive with stdev_init)
"""

# ----- the recipe's env backend: a line whose return is known in closed form --------------

LENGTH = 7  # the line env's own episode length (problem.episode_length cuts it shorter)
TARGET = 1.0  # reward -(action - TARGET)^2 each step; the observation is always 1


def line_return(action: float, steps: int) -> float:
    """The closed-form return of an episode of ``steps`` steps at constant ``action``."""
    return -steps * (action - TARGET) ** 2


class LineVecEnv(TorchVecEnv):
    """``num_envs`` copies of the line env, with gymnasium's next-step autoreset."""

    def __init__(self, spec: str, num_envs: int, length: int, device: Any):
        self.spec, self.num_envs, self.length = spec, num_envs, length
        self.device = torch.device(device)
        self.single_observation_space, self.single_action_space, self.env_action_space = \
            line_spaces(spec, "", {})
        self.steps = torch.zeros(num_envs, dtype=torch.long)
        self.ended = torch.zeros(num_envs, dtype=torch.bool)  # done at the last step

    def reset(self, seed: Any = None) -> torch.Tensor:
        self.steps.zero_()
        self.ended.zero_()
        return torch.ones(self.num_envs, 1, device=self.device)

    def step(self, actions: torch.Tensor, active: Any = None) -> tuple[torch.Tensor, ...]:
        reward = -(actions[:, 0].float().cpu() - TARGET) ** 2
        reward = torch.where(self.ended, torch.zeros_like(reward), reward)  # the reset step
        self.steps = torch.where(self.ended, torch.zeros_like(self.steps), self.steps + 1)
        self.ended = self.steps >= self.length
        return (torch.ones(self.num_envs, 1, device=self.device), reward.to(self.device),
                self.ended.clone().to(self.device))


def line_spaces(spec: str, name: str, env_config: dict) -> tuple[spaces.Box, ...]:
    box = spaces.Box(-float("inf"), float("inf"), shape=(1,), dtype="float32")
    return box, box, box


def make_line(spec: str, name: str, num_envs: int, options: dict) -> TorchVecEnv:
    return LineVecEnv(spec, num_envs, options["episode_length"] or LENGTH, options["device"])


# ----- the recipe's logger ------------------------------------------------------------------


@dataclass(frozen=True)
class TinySettings:
    """``logger.tiny.*``: its keys and their ranges (the YAML below holds the values)."""

    enabled: bool = False
    every: int = setting(1, ge=1)


class TinyLogger(Logger):
    """Keeps what it is given (``received``: every instance's calls, in order)."""

    Settings = TinySettings
    received: list[tuple[str, Any]] = []

    def __init__(self, every: int):
        self.every = every

    @classmethod
    def from_settings(cls, settings: TinySettings, context) -> Logger:
        return cls(settings.every)

    def log(self, generation: int, status) -> None:
        if generation % self.every == 0:
            TinyLogger.received.append(("log", (generation, dict(status))))

    def close(self, summary) -> None:
        TinyLogger.received.append(("close", dict(summary)))


LOGGER_SECTION = """\
tiny:  # the recipe's logger (tests/test_recipes.py)
  enabled: false  # keep every generation's status in memory
  every: 1  # every N generations
"""

# ----- the rows and YAML, put in place as the recipes say -------------------------------------


@pytest.fixture
def conf_dir(tmp_path):
    """A config folder put on Hydra's search path (`compose`), standing for the packaged
    neurorun/conf/: algo/tiny.yaml, and logger/recipe.yaml (logger/default.yaml plus the
    tiny section; the schema's side of that section: `logger_yaml`)."""
    folder = tmp_path / "conf"
    (folder / "algo").mkdir(parents=True)
    (folder / "algo" / "tiny.yaml").write_text(ALGO_YAML)
    (folder / "logger").mkdir()
    (folder / "logger" / "recipe.yaml").write_text(
        "defaults:\n  - default\n  - _self_\n" + LOGGER_SECTION)
    return folder


def compose(conf_dir, *overrides):
    return compose_config([
        "debug=default", "logger.console.quiet=true",
        f"hydra.searchpath=[file://{conf_dir},neurorun://neurorun.conf]", *overrides])


@pytest.fixture
def tiny_backend(monkeypatch):
    """The backend's row in BACKENDS."""
    monkeypatch.setitem(backends.BACKENDS, "tiny", backends.Backend(line_spaces, make_line,
                                                                     "a line"))


def metrics(run_dir):
    with open(run_dir / "metrics.csv", newline="") as file:
        return list(csv.DictReader(file))


class Centers(Callbacks):
    """The algorithm's center after each generation."""

    def __init__(self):
        self.centers = []

    def on_generation_end(self, runner, generation, status):
        self.centers.append(runner.algorithm.center.double().tolist())


# ----- the tests ------------------------------------------------------------------------------


def test_a_new_env_backend_yields_its_closed_form_returns(tmp_path, conf_dir, tiny_backend):
    steps = 5
    centers = Centers()
    run(compose(conf_dir, "env=tiny::line", f"problem.episode_length={steps}"),
        run_dir=tmp_path / "run", callbacks=centers)
    rows = metrics(tmp_path / "run")
    assert [int(row["generation"]) for row in rows] == [1, 2]
    for row, center in zip(rows, centers.centers, strict=True):
        # Linear(1, 1) on the observation 1: action = weight + bias
        assert float(row["center_eval"]) == pytest.approx(line_return(sum(center), steps),
                                                          rel=1e-5, abs=1e-6)
        assert int(row["interactions"]) == 10 * steps  # popsize 10, one episode each
        assert float(row["episode_length_min"]) == float(row["episode_length_max"]) == steps
        assert float(row["episode_return_max"]) == pytest.approx(float(row["pop_best_eval"]))
        assert float(row["pop_best_eval"]) <= 0


def test_without_its_row_a_backend_prefix_is_refused(tmp_path, conf_dir):
    with pytest.raises(ValueError, match="unknown backend 'tiny'"):
        run(compose(conf_dir, "env=tiny::line"), run_dir=tmp_path / "run")


def test_a_new_algorithm_runs_from_its_row_and_yaml(tmp_path, conf_dir, tiny_backend,
                                                    monkeypatch):
    monkeypatch.setitem(ALGORITHMS, "tiny", TinySearch)
    steps = 3
    centers = Centers()
    run(compose(conf_dir, "algo=tiny", "env=tiny::line", f"problem.episode_length={steps}"),
        run_dir=tmp_path / "run", callbacks=centers)
    rows = metrics(tmp_path / "run")
    assert [int(row["generation"]) for row in rows] == [1, 2]
    for row, center in zip(rows, centers.centers, strict=True):
        assert int(row["popsize"]) == 10  # debug=default's
        assert float(row["stdev_mean"]) == 0.5  # algo/tiny.yaml's stdev_init, never changed
        # the center is the generation's best sample, on a deterministic env
        best = line_return(sum(center), steps)
        assert float(row["center_eval"]) == pytest.approx(best, rel=1e-5, abs=1e-6)
        assert float(row["pop_best_eval"]) == pytest.approx(best, rel=1e-5, abs=1e-6)


def test_without_its_row_an_algorithm_is_refused(conf_dir, tmp_path):
    with pytest.raises(ConfigError, match="algo.name='tiny': expected one of"):
        run(compose(conf_dir, "algo=tiny"), run_dir=tmp_path / "run")


@pytest.fixture
def tiny_logger(monkeypatch):
    """The logger's row in LOGGERS."""
    monkeypatch.setitem(LOGGERS, "tiny", TinyLogger)
    monkeypatch.setattr(TinyLogger, "received", [])


def test_a_new_logger_receives_every_generation(tmp_path, conf_dir, tiny_logger):
    run(compose(conf_dir, "logger=recipe", "logger.tiny.enabled=true"), run_dir=tmp_path / "run")
    rows = metrics(tmp_path / "run")
    logged = [args for call, args in TinyLogger.received if call == "log"]
    assert [generation for generation, _ in logged] == [int(row["generation"]) for row in rows]
    assert [generation for generation, _ in logged] == [1, 2]
    for (_, status), row in zip(logged, rows, strict=True):
        assert list(status) == list(row)  # metrics.csv's columns, in order
        assert float(status["mean_eval"]) == float(row["mean_eval"])
    assert [call for call, _ in TinyLogger.received] == ["log", "log", "close"]


def test_a_logger_section_without_its_row_is_refused(tmp_path, conf_dir):
    with pytest.raises(ConfigError, match=r"logger\.tiny=\{.*\}: no such key"):
        run(compose(conf_dir, "logger=recipe", "logger.tiny.enabled=true"),
            run_dir=tmp_path / "run")
    assert TinyLogger.received == []


def test_a_logger_key_its_settings_do_not_declare_is_refused(tmp_path, conf_dir, tiny_logger):
    with pytest.raises(ConfigError, match=r"logger\.tiny\.evry=2: no such key.*did you mean "
                                          r"logger\.tiny\.every\?"):
        run(compose(conf_dir, "logger=recipe", "+logger.tiny.evry=2"), run_dir=tmp_path / "run")
    with pytest.raises(ConfigError, match=r"logger\.tiny\.every=0: expected an integer >= 1"):
        run(compose(conf_dir, "logger=recipe", "logger.tiny.every=0"), run_dir=tmp_path / "run")


# ----- the files each recipe touches ----------------------------------------------------------


def test_architecture_counts_the_files_each_recipe_touches():
    text = (ROOT / "docs" / "architecture.md").read_text()
    counted = {kind: (int(count), tuple(re.findall(r"`([^`]+)`", files)))
               for kind, count, files in re.findall(
                   r"\*\*An? ([a-z ]+)\*\* \(`[^`]+`\) touches (\d+) files: (.*?)(?: \(|\.\n)",
                   text, re.S)}
    assert counted == {kind: (len(files), files) for kind, files in RECIPE_FILES.items()}


def test_every_row_lives_where_its_recipe_puts_it():
    for name, kind in ALGORITHMS.items():
        assert Path(inspect.getsourcefile(kind)).parent == ROOT / "neurorun" / "algorithms"
        assert (ROOT / "neurorun" / "conf" / "algo" / f"{name}.yaml").is_file()
    for prefix in backends.BACKENDS:
        if prefix != "factory":  # `env=module:function`, not a prefix
            assert (ROOT / "neurorun" / "envs" / f"{prefix}_env.py").is_file()
    for kind in LOGGERS.values():
        assert Path(inspect.getsourcefile(kind)).parent == ROOT / "neurorun" / "loggers"
