"""A Hydra config source that serves `env=<anything>` without a YAML file per environment.

neurorun's primary config puts `neurorun://neurorun.conf` on its search path (after
`pkg://neurorun.conf`). When the packaged configs have no `env/<name>.yaml`, Hydra asks this
source, which accepts every spelling of an environment:

    env=CartPole-v1   env=gym::Humanoid-v5   env=envpool::Hopper-v5   env=brax/humanoid
    env=playground/CheetahRun

`<backend>/x` becomes `<backend>::x` for every spec prefix of neurorun.envs (other slashes
stay: gymnasium namespaces such as `ALE/Pong-v5`). If a preset exists for the canonical id
(`env/<env_slug(id)>.yaml` in the packaged configs, e.g. `brax_humanoid.yaml` with its reward
shaping), that preset is served (`envpool::Id` and `gym::Id` get the preset of `Id`, keeping
their prefix); otherwise a generic `{id: <id>, env_config: {}, target_score: null}`. Whether
the id exists is checked by the runner before anything is built, so a typo ends with the
closest registered ids.

`register_hydra_extensions()` registers this source with Hydra (explicitly, so it works in
editable and regular installs alike, without a `hydra_plugins` namespace package) and the
`neurorun.*` resolvers used in the run directory names.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

from hydra._internal.sources_registry import SourcesRegistry
from hydra.core.object_type import ObjectType
from hydra.core.plugins import Plugins
from hydra.plugins.config_source import ConfigLoadError, ConfigResult, ConfigSource
from omegaconf import DictConfig, OmegaConf

from neurorun.layout import HYDRA_DIR

GROUP = "env"


def canonical_env_id(name: str) -> str:
    """`brax/humanoid` -> `brax::humanoid`; every other spelling is returned unchanged."""
    from neurorun.envs.backends import PREFIXES

    for backend in PREFIXES:
        if name.startswith(backend + "/"):
            return f"{backend}::{name[len(backend) + 1:]}"
    return name


def env_slug(env_id: Any) -> str:
    """A folder- and file-name-safe form of an env id: `brax::humanoid` -> `brax_humanoid`.

    The default backend's prefix is dropped (`gym::Humanoid-v5` -> `Humanoid-v5`), so both
    spellings of one gymnasium env share a preset and a runs folder.
    """
    text = canonical_env_id(str(env_id))
    text = text.removeprefix("gym::")
    return re.sub(r"[^A-Za-z0-9._+-]+", "_", text).strip("_") or "env"


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
                OmegaConf.create(preset.read_text(encoding="utf-8")), GROUP) == wanted:
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


def run_dir_name(resume: Any, env_id: Any, algo: Any, seed: Any) -> str:
    """`runs/<env>/<algo>/<date>_<time>_s<seed>` (`_2`, `_3`, ... when that folder exists), or
    the folder being resumed."""
    if resume not in (None, ""):
        return str(resume)
    stamp = datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    name = f"runs/{env_slug(env_id)}/{algo}/{stamp}_s{seed}"
    count = 1
    while Path(name if count == 1 else f"{name}_{count}").exists():  # started in the same second
        count += 1
    return name if count == 1 else f"{name}_{count}"


def _output_subdir(resume: Any) -> str:
    """Hydra's files: `.hydra`, or a fresh subfolder of it when resuming (keeps the original)."""
    if resume in (None, ""):
        return HYDRA_DIR
    return f"{HYDRA_DIR}/resumed_" + datetime.now().strftime("%Y-%m-%d_%H-%M-%S")


class NeurorunEnvSource(ConfigSource):
    """Answers `env/<name>` for every name; `path` is the package holding the presets."""

    def __init__(self, provider: str, path: str) -> None:
        super().__init__(provider=provider, path=path)
        self.path = self.path.replace("/", ".").rstrip(".")

    @staticmethod
    def scheme() -> str:
        return "neurorun"

    def _env_name(self, config_path: str) -> str | None:
        prefix = GROUP + "/"
        if not config_path.startswith(prefix):
            return None
        name = config_path[len(prefix):]
        name = name.removesuffix(".yaml")
        return name or None

    def _preset(self, env_id: str) -> Any:
        try:
            folder = resources.files(self.path).joinpath(GROUP)
        except (ModuleNotFoundError, ValueError, TypeError):
            return None
        preset = folder.joinpath(env_slug(env_id) + ".yaml")
        return preset if preset.is_file() else None

    def load_config(self, config_path: str) -> ConfigResult:
        name = self._env_name(config_path)
        if name is None:
            raise ConfigLoadError(f"neurorun:// serves only {GROUP}/<id>, not {config_path}")
        env_id = canonical_env_id(name)
        # one preset per task: `envpool::Id` and `gym::Id` use the preset of `Id`
        preset = self._preset(env_id.removeprefix("envpool::"))
        if preset is not None:
            text = preset.read_text(encoding="utf-8")
            cfg = OmegaConf.create(text)
            header = ConfigSource._get_header_dict(text)
            env = cfg.env if header.get("package") == "_global_" else cfg
            if "::" in env_id:  # the backend named on the command line stays
                env.id = env_id
        else:
            cfg = OmegaConf.create({"id": env_id, "env_config": {}, "target_score": None})
            header = {"package": None}
        return ConfigResult(
            config=cfg, path=self.full_path(), provider=self.provider, header=header
        )

    def available(self) -> bool:
        return True

    def is_group(self, config_path: str) -> bool:
        return config_path.strip("/") == GROUP

    def is_config(self, config_path: str) -> bool:
        return self._env_name(config_path) is not None

    def list(self, config_path: str, results_filter: ObjectType | None) -> list[str]:
        # Every name is an option: listing none keeps `--help` to the packaged presets.
        return []


def register_hydra_extensions() -> None:
    """Register the `neurorun://` config source and the `neurorun.*` resolvers (idempotent)."""
    Plugins.instance()  # Hydra's own sources first: it rebuilds the registry when it starts
    SourcesRegistry.instance().register(NeurorunEnvSource)
    for name, func in (
        ("neurorun.slug", env_slug),
        ("neurorun.run_dir", run_dir_name),
        ("neurorun.output_subdir", _output_subdir),
    ):
        # cached: a resumed run's subfolder is named once, however often Hydra reads it
        OmegaConf.register_new_resolver(name, func, replace=True,
                                        use_cache=name == "neurorun.output_subdir")
