"""EnvPool's MuJoCo models without what only rendering uses, for the pools of evaluations.

A pool builds each of its envs' models from the env's XML, and MuJoCo draws the model's
textures as it compiles it: measured on 2 cores, a pool of 64 HalfCheetah-v5 envs took 80-100
ms to build with them and 25-40 ms without, Humanoid-v5 110 and 45-65 ms, paid at every
evaluation (EnvPool seeds an env only as it builds it, so every new seed needs a new pool).
Textures and materials only colour the rendering, which neurorun's pools never draw: without
them the simulation is the same, step for step (tests/envs/test_envpool_models.py compares).

Served: EnvPool's gymnasium MuJoCo envs on EnvPool's own models (the folder
``<base_path>/mujoco/assets_gym``, copied whole: EnvPool picks the file it loads by names of its
own), where no model there reads another file (meshes, includes). Every other env, and an
``env_config.xml_file`` of the user's, keeps its model.
"""

from __future__ import annotations

import atexit
import functools
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
    """A base_path (this process's, made once) holding EnvPool's gymnasium models without what
    only rendering uses; None where it cannot be made or a model reads other files."""
    try:
        models = {path.name: ElementTree.parse(path) for path in Path(base_path, ASSETS).iterdir()}
    except (OSError, ElementTree.ParseError):  # out of reach, a folder or not a model
        return None
    if any("file" in element.attrib for model in models.values() for element in model.iter()):
        return None  # meshes, includes: files found next to the models
    try:
        folder = Path(tempfile.mkdtemp(prefix="neurorun-envpool-models-"))
        atexit.register(_remove, folder, os.getpid())
        (folder / ASSETS).mkdir(parents=True)
        for name, model in models.items():
            _strip_rendering(model.getroot())
            model.write(folder / ASSETS / name)
    except OSError:  # no writable temporary folder
        return None
    return str(folder)


def _remove(folder: Path, owner: int) -> None:
    """Remove the copy as the process that made it exits (not a forked child of it)."""
    if os.getpid() == owner:
        shutil.rmtree(folder, ignore_errors=True)


def _strip_rendering(root: ElementTree.Element) -> None:
    for element in root.iter():
        for child in [c for c in element if c.tag in RENDERING_ONLY]:
            element.remove(child)
        element.attrib.pop("material", None)
