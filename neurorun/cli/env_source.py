"""A Hydra config source that serves `env=<anything>` without a YAML file per environment.

neurorun's primary config puts `neurorun://neurorun.conf` on its search path (after
`pkg://neurorun.conf`). When the packaged configs have no `env/<name>.yaml`, Hydra asks this
source, which accepts every spelling of an environment:

    env=CartPole-v1   env=gym::Humanoid-v5   env=envpool::Hopper-v5   env=brax/humanoid
    env=playground/CheetahRun

`<backend>/x` becomes `<backend>::x` for every spec prefix of neurorun.envs (other slashes
stay: gymnasium namespaces such as `ALE/Pong-v5`). If a preset exists for the canonical id
(`env/<preset_slug(id)>.yaml` in the packaged configs, e.g. `brax_humanoid.yaml` with its reward
shaping), that preset is served (`envpool::Id` and `gym::Id` get the preset of `Id`, keeping
their prefix); otherwise a generic `{id: <id>, env_config: {}, target_score: null}`. Whether
the id exists is checked by the runner before anything is built, so a typo ends with the
closest registered ids. Likewise `env_algo/<spelling>/<algo>` (config.yaml's specializing
default `${env}/${algo}`) is served the packaged `env_algo/<preset_slug(id)>/<algo>.yaml` for
every spelling of an env that has one (`env=brax/humanoid` gets brax_humanoid's PGPE settings).

`register_hydra_extensions()` registers this source with Hydra (explicitly, so it works in
editable and regular installs alike, without a `hydra_plugins` namespace package) and the
`neurorun.*` resolvers used in the run directory names.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from hydra._internal.sources_registry import SourcesRegistry
from hydra.core.object_type import ObjectType
from hydra.core.plugins import Plugins
from hydra.plugins.config_source import ConfigLoadError, ConfigResult, ConfigSource
from omegaconf import OmegaConf

from neurorun.cli.folder_claim import job_output_subdir
from neurorun.envs.names import canonical_env_id, preset_slug
from neurorun.record.layout import job_dir_name, run_dir_name, sweep_dir_name

GROUP = "env"
TUNED = "env_algo"  # an algorithm's settings for one env: env_algo/<env>/<algo>.yaml


def env_path_error(name: str) -> str | None:
    """Why ``name`` (an `env=` option) is refused, or None. A part `..` or `.`, or an empty one
    (a leading or doubled `/`), would name a file outside env/: `env=../algo/snes` composed the
    SNES settings as an env (a traceback), `env=../config` the primary config."""
    if not any(part in ("", ".", "..") for part in name.split("/")):
        return None
    return (f"env={name}: an env name has no path parts (`..`, `.`, a leading or doubled `/`). "
            "Fix: a gymnasium id (ALE/Pong-v5 too), brax::<name> or playground::<name>")


class NeurorunEnvSource(ConfigSource):
    """Answers `env/<name>` for every name, and `env_algo/<name>/<algo>` for every spelling of
    an env that has such a file; `path` is the package holding the presets."""

    def __init__(self, provider: str, path: str) -> None:
        super().__init__(provider=provider, path=path)
        self.path = self.path.replace("/", ".").rstrip(".")

    @staticmethod
    def scheme() -> str:
        return "neurorun"

    @staticmethod
    def _name(config_path: str, group: str) -> str | None:
        """`<group>/<name>[.yaml]` -> name, else None (ConfigLoadError: an env name with path
        parts, `env_path_error`)."""
        if not config_path.startswith(group + "/"):
            return None
        name = config_path[len(group) + 1:].removesuffix(".yaml")
        if not name:
            return None
        said = env_path_error(name.rsplit("/", 1)[0] if group == TUNED else name)
        if said:
            raise ConfigLoadError(said)
        return name

    def _packaged(self, group: str, env_id: str, suffix: str = ".yaml") -> Any:
        """The packaged file of ``group`` for the canonical ``env_id`` (one per task:
        `envpool::Id` and `gym::Id` use the one of `Id`), or None."""
        try:
            folder = resources.files(self.path).joinpath(group)
        except (ModuleNotFoundError, ValueError, TypeError):
            return None
        found = folder.joinpath(preset_slug(env_id) + suffix)
        return found if found.is_file() else None

    def _tuned(self, config_path: str) -> Any:
        """The packaged env_algo file a `env_algo/<any spelling>/<algo>` path means, or None."""
        name = self._name(config_path, TUNED)
        if name is None or "/" not in name:
            return None
        env_name, algo = name.rsplit("/", 1)
        return self._packaged(TUNED, canonical_env_id(env_name), f"/{algo}.yaml")

    def load_config(self, config_path: str) -> ConfigResult:
        tuned = self._tuned(config_path)
        if tuned is not None:
            text = tuned.read_text(encoding="utf-8")
            return ConfigResult(config=OmegaConf.create(text), path=self.full_path(),
                                provider=self.provider,
                                header=ConfigSource._get_header_dict(text))
        name = self._name(config_path, GROUP)
        if name is None:
            raise ConfigLoadError(f"neurorun:// serves only {GROUP}/<id> and {TUNED}/<id>/"
                                  f"<algo>, not {config_path}")
        env_id = canonical_env_id(name)
        preset = self._packaged(GROUP, env_id)
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
        return (self._name(config_path, GROUP) is not None
                or self._tuned(config_path) is not None)

    def list(self, config_path: str, results_filter: ObjectType | None) -> list[str]:
        # Every name is an option: listing none keeps `--help` to the packaged presets.
        return []


def register_hydra_extensions() -> None:
    """Register the `neurorun://` config source and the `neurorun.*` resolvers (idempotent)."""
    Plugins.instance()  # Hydra's own sources first: it rebuilds the registry when it starts
    SourcesRegistry.instance().register(NeurorunEnvSource)
    for name, func in (
        ("neurorun.run_dir", run_dir_name),
        ("neurorun.job_dir", job_dir_name),
        ("neurorun.sweep_dir", sweep_dir_name),
        ("neurorun.output_subdir", job_output_subdir),
    ):
        # the sweep folder cached in the config: Hydra copies a config's cache into each job's
        # (a launcher may run jobs in other processes, which did not claim the folder)
        OmegaConf.register_new_resolver(name, func, replace=True,
                                        use_cache=name == "neurorun.sweep_dir")
