"""Names made from an env id: its canonical spelling, and the file- and folder-name forms the
run folders and the packaged presets use. Naming a folder or finding a preset loads no env
library (torch, gymnasium): the backends' table does not."""

from __future__ import annotations

import re
from typing import Any

from neurorun.envs.backends import spec_prefixes


def canonical_env_id(name: str) -> str:
    """`brax/humanoid` -> `brax::humanoid`; every other spelling is returned unchanged."""
    for backend in spec_prefixes():
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


def preset_slug(env_id: Any) -> str:
    """The file name of ``env_id``'s packaged presets (env, env_algo, experiment): one per
    task, so `envpool::Id` and `gym::Id` use those of `Id`."""
    return env_slug(str(env_id).removeprefix("envpool::"))
