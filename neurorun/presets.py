"""What the packaged presets say, read from their YAML files: the experiment made for an env
(`hints.preset_hint`) and the algorithm a preset's `algo:` block was tuned for (`cli`)."""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from typing import Any

from omegaconf import DictConfig, OmegaConf

from neurorun.envs.backends import env_slug


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
    wanted = env_slug(str(env_id).removeprefix("envpool::"))
    for preset in sorted(_packaged("experiment").iterdir(), key=lambda f: f.name):
        if preset.name.endswith(".yaml") and _preset_override(
                OmegaConf.create(preset.read_text(encoding="utf-8")), "env") == wanted:
            return preset.name.removesuffix(".yaml")
    return None


def _default_choice(group: str) -> str:
    """The option config.yaml's defaults list picks for ``group`` (algo: "pgpe")."""
    config = OmegaConf.create(_packaged("config.yaml").read_text(encoding="utf-8"))
    return next(entry[group] for entry in config.defaults
                if isinstance(entry, Mapping) and group in entry)


def preset_algo(group: str, choice: Any) -> tuple[str | None, DictConfig]:
    """The algorithm a packaged preset's `algo:` block was tuned for (the one its defaults list
    picks, else the default one) and that block; (None, {}) for no preset, one without that
    block, or one that is not packaged (a user's own search path)."""
    path = _packaged(group, f"{choice}.yaml")
    if choice in (None, "null") or not path.is_file():
        return None, OmegaConf.create()
    preset = OmegaConf.create(path.read_text(encoding="utf-8"))
    block = preset.get("algo")
    if not isinstance(block, DictConfig) or not block:
        return None, OmegaConf.create()
    return _preset_override(preset, "algo") or _default_choice("algo"), block
