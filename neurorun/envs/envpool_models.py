"""EnvPool's MuJoCo models without what only rendering uses, for the pools of evaluations.

A pool builds each of its envs' models from the env's XML, and MuJoCo draws the model's
textures as it compiles it: most of a pool's build time, paid at every evaluation (EnvPool
seeds an env only as it builds it, so every new seed needs a new pool; docs/benchmarks.md).
Textures and materials only colour the rendering, which neurorun's pools never draw: without
them the simulation is the same, step for step (tests/envs/test_envpool_models.py compares).

Served: EnvPool's gymnasium MuJoCo envs on EnvPool's own models (the folder
``<base_path>/mujoco/assets_gym``, copied whole: EnvPool picks the file it loads by names of its
own), where no model there reads another file (meshes, includes). Every other env, and an
``env_config.xml_file`` of the user's, keeps its model. The copies lie in the user's cache
(``~/.cache/neurorun/envpool-models-<digest>``, about 100 kB per EnvPool version), checked
against the models made from EnvPool's at each process's first use, and rewritten where they
differ.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

GYM_MUJOCO = "envpool.mujoco.mujoco_gym_envpool"  # the module of their spec classes
ASSETS = Path("mujoco", "assets_gym")
RENDERING_ONLY = ("texture", "material")  # elements (and the attribute naming a material)


def lean_model_options(spec: Any, env_config: Mapping[str, Any]) -> dict[str, str]:
    """EnvPool options (a ``base_path``) that build ``spec``'s envs from copies of EnvPool's
    gymnasium models without textures and materials; {} where the envs keep their own model."""
    served = any(cls.__module__ == GYM_MUJOCO for cls in type(spec).__mro__)
    if not served or "xml_file" in env_config:
        return {}
    folder = _lean_assets(str(spec.config.base_path))
    return {} if folder is None else {"base_path": folder}


@functools.cache
def _lean_assets(base_path: str) -> str | None:
    """A base_path holding EnvPool's gymnasium models without what only rendering uses (in the
    user's cache, one folder per content, checked against the models made here at every
    process's first use); None where it cannot be made or a model reads other files."""
    try:
        models = {path.name: ElementTree.parse(path) for path in Path(base_path, ASSETS).iterdir()}
    except (OSError, ElementTree.ParseError):  # out of reach, a folder or not a model
        return None
    if any("file" in element.attrib for model in models.values() for element in model.iter()):
        return None  # meshes, includes: files found next to the models
    lean = {name: _strip_rendering(model.getroot()) for name, model in sorted(models.items())}
    digest = hashlib.sha256(b"".join(name.encode() + b"\0" + text for name, text in lean.items()))
    folder = cache_root() / f"envpool-models-{digest.hexdigest()[:16]}"
    if _holds(folder, lean):
        return str(folder)
    try:  # written whole beside it, then renamed: a process reading it never sees a part
        cache_root().mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=cache_root()))
        (staging / ASSETS).mkdir(parents=True)
        for name, text in lean.items():
            (staging / ASSETS / name).write_bytes(text)
        if folder.exists():  # changed since it was written: moved aside, then removed
            aside = staging.with_name(staging.name + "-old")
            with contextlib.suppress(OSError):  # another process moved it first
                folder.rename(aside)
            shutil.rmtree(aside, ignore_errors=True)
        with contextlib.suppress(OSError):  # another process made it first
            staging.rename(folder)
        shutil.rmtree(staging, ignore_errors=True)
    except OSError:  # no writable cache: the envs keep EnvPool's models
        return None
    return str(folder) if _holds(folder, lean) else None


def cache_root() -> Path:
    """neurorun's folder in the user's cache ($XDG_CACHE_HOME, else ~/.cache)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache", "neurorun")


def _holds(folder: Path, lean: dict[str, bytes]) -> bool:
    """Whether ``folder`` holds exactly these models (nothing that was changed since)."""
    try:
        return (sorted(p.name for p in (folder / ASSETS).iterdir()) == list(lean)
                and all((folder / ASSETS / name).read_bytes() == text
                        for name, text in lean.items()))
    except OSError:
        return False


def _strip_rendering(root: ElementTree.Element) -> bytes:
    """The model without its textures and materials, as XML."""
    for element in root.iter():
        for child in [c for c in element if c.tag in RENDERING_ONLY]:
            element.remove(child)
        element.attrib.pop("material", None)
    return ElementTree.tostring(root)
