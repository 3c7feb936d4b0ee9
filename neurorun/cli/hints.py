"""What the console tells a user who starts a bare `neurorun env=<id>`: the tuned experiment
preset made for that env and, once this run's speed is known, how long one generation of
that preset would take here (a preset made for a GPU can sample millions of env steps a
generation)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from importlib import resources
from typing import Any

from omegaconf import DictConfig, OmegaConf

from neurorun.envs.names import preset_slug
from neurorun.loop.callbacks import Callbacks
from neurorun.loop.runner import Runner


def _packaged(*parts: str) -> Any:
    return resources.files("neurorun.conf").joinpath(*parts)


def _preset_override(preset: DictConfig, group: str) -> str | None:
    """The option an experiment preset's defaults list picks for ``group`` (`override /algo:
    ars` -> "ars"), or None."""
    for entry in preset.get("defaults", []):
        if isinstance(entry, Mapping) and f"override /{group}" in entry:
            return entry[f"override /{group}"]
    return None


def experiment_for(env_id: Any) -> str | None:
    """The packaged experiment= preset made for ``env_id`` (its defaults list overrides
    /env with it; envpool:: and gym:: spellings count), or None."""
    wanted = preset_slug(env_id)
    for preset in sorted(_packaged("experiment").iterdir(), key=lambda f: f.name):
        if preset.name.endswith(".yaml") and _preset_override(
                OmegaConf.create(preset.read_text(encoding="utf-8")), "env") == wanted:
            return preset.name.removesuffix(".yaml")
    return None


# the generation whose speed the pace is taken from: generation 1 holds the compile
PACE_GENERATION = 2
WORTH_SAYING = 60.0  # seconds: a preset generation shorter than this needs no warning


def preset_steps(preset: DictConfig) -> tuple[int, str] | None:
    """The env steps one generation of the composed ``preset`` makes, with how that number
    bounds it ("at least": adaptive popsize, "at most": popsize x episodes x episode length),
    or None where neither is known (no episode length of its own)."""
    if preset.algo.get("num_interactions") is not None:
        return int(preset.algo.num_interactions), "at least"
    if preset.problem.episode_length is None:
        return None
    return (int(preset.algo.popsize) * int(preset.problem.num_episodes)
            * int(preset.problem.episode_length)), "at most"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


class PresetPace(Callbacks):
    """After generation ``PACE_GENERATION``, one line: how long a generation of ``preset``
    takes at this run's counted env steps per second."""

    def __init__(self, preset: str, steps: int, bound: str):
        self.preset, self.steps, self.bound = preset, steps, bound

    def on_generation_end(self, runner: Runner, generation: int, status: dict[str, Any]) -> None:
        rate = float(status.get("steps_per_s") or 0.0)
        if generation == PACE_GENERATION and rate > 0 and self.steps / rate > WORTH_SAYING:
            print(f"neurorun: a generation of experiment={self.preset} makes {self.bound} "
                  f"{self.steps:,} env steps: about {_duration(self.steps / rate)} each at "
                  f"this run's {rate:,.0f} steps/s", file=sys.stderr)


def preset_hint(env_id: Any, algo: DictConfig, compose_preset: Any) -> PresetPace | None:
    """Print the packaged experiment preset made for ``env_id``, if any; the callback that
    later says how long its generations take here. ``compose_preset(name)`` composes it.
    Nothing when the run's ``algo`` section already holds settings tuned for the env (an
    env_algo preset) and the experiment is another recipe of that algorithm (brax humanoid's:
    EvoTorch's GPU setup, where the headline's own settings are the measured ones)."""
    preset = experiment_for(env_id)
    if preset is None:
        return None
    composed = compose_preset(preset)
    if (composed.algo.name == algo.name
            and _packaged("env_algo", preset_slug(env_id), f"{algo.name}.yaml").is_file()
            and OmegaConf.to_container(composed.algo, resolve=True)
            != OmegaConf.to_container(algo, resolve=True)):
        return None
    print(f"neurorun: {env_id} has a tuned preset: `neurorun experiment={preset}` "
          "(docs/locomotion.md)", file=sys.stderr)
    steps = preset_steps(composed)
    return None if steps is None else PresetPace(preset, *steps)
