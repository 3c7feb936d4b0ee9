"""The optional parts of neurorun (pyproject.toml's extras) and the one line a missing one
gives: ``env=brax::ant needs jax and brax: pip install 'neurorun[jax]'``.

`pip install neurorun` runs gymnasium (and users' factory) envs locally; brax and Playground
envs, ray, EnvPool, neurorun-plot, ONNX export and MP4 videos each need their extra. Code that
needs one calls `require` before it imports the extra's packages (the config check calls it
before a run starts), so a missing package stops with that line, not with a traceback from deep
inside.
"""

from __future__ import annotations

from importlib.util import find_spec

# extra -> the modules of its packages that neurorun imports (pyproject.toml installs them)
EXTRAS: dict[str, tuple[str, ...]] = {
    "jax": ("jax", "brax"),
    "playground": ("jax", "brax", "mujoco_playground"),
    "ray": ("ray",),
    "plots": ("matplotlib",),
    "envpool": ("envpool",),
    "export": ("onnx", "onnxruntime"),
    "video": ("imageio_ffmpeg",),  # MP4: ffmpeg (imageio itself comes with gymnasium[mujoco])
}


class MissingExtraError(ImportError):
    """A package of an extra is not installed; the message names it and the pip command."""


def missing_modules(extra: str) -> list[str]:
    """The modules of ``extra`` that this Python cannot import (none: the extra is there)."""
    return [module for module in EXTRAS[extra] if find_spec(module) is None]


def require(extra: str, needed_by: str, otherwise: str = "") -> None:
    """MissingExtraError when a package of ``extra`` is missing; ``needed_by`` says what
    asked for it, as the user wrote it (``env=brax::ant``, ``parallel=ray``), ``otherwise``
    the way round it, if one (``logger.video_format=gif``)."""
    missing = missing_modules(extra)
    if missing:
        names = " and ".join([", ".join(missing[:-1]), missing[-1]] if missing[:-1] else missing)
        raise MissingExtraError(f"{needed_by} needs {names}: pip install 'neurorun[{extra}]'"
                                + (f", or {otherwise}" if otherwise else ""))
