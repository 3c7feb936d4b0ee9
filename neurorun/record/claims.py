"""The folders this process made, and the new run or sweep folder its command claimed.

A new run's folder is named `runs/<env>/<algo>/<date>_<time>_s<seed>` and a sweep's
`runs/multirun/<date>_<time>`: two commands started in the same second would pick the same
name. The command claims its folder by making it (``os.mkdir`` fails when it exists, and the
next name, `_2`, `_3`, ..., is tried), once per process: Hydra reads the name several times,
and each reading gives the claimed folder. Outside ``claiming()`` (a test or a Python user
composing the config) a name is only worked out, and nothing is made.

Every folder made here is recorded, so that a run refused or stopped before it started leaves
none of them behind (``remove_unused``) and no folder this process did not make is removed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

_made: list[Path] = []  # absolute, in the order they were made (parents first)
_claimed: dict[str, str] = {}  # "run" or "sweep" -> the folder this process claimed
_claiming = False


@contextlib.contextmanager
def claiming() -> Iterator[None]:
    """Inside, :func:`folder_name` makes the folder it names (the command's claim)."""
    global _claiming
    _claiming = True
    try:
        yield
    finally:
        _claiming = False


def make_folders(path: str | Path) -> bool:
    """Make ``path`` and its missing parents, recording each one made here; whether ``path``
    itself was made here (False: it was there already, perhaps made by another process a moment
    ago: ``os.mkdir`` says so atomically)."""
    path = Path(path)
    made = False
    for step in reversed([step for step in (path, *path.parents) if not step.is_dir()]):
        try:
            step.mkdir()
        except FileExistsError:  # another process made it meanwhile: not ours to remove
            made = False
            continue
        _made.append(step.absolute())
        made = True
    return made


def new_folder(base: str | Path) -> str:
    """Make a new folder named ``base``, or ``base_2``, ``base_3``, ... when that one exists
    (two processes never get the same one); its name."""
    count = 1
    while not make_folders(name := str(base) if count == 1 else f"{base}_{count}"):
        count += 1
    return name


def folder_name(kind: str, base: str) -> str:
    """The folder of this process's new run (``kind`` "run") or sweep ("sweep") named after
    ``base``: the one it claimed; inside :func:`claiming`, a new one (:func:`new_folder`),
    claimed now; else the first of ``base``, ``base_2``, ... that does not exist (nothing is
    made)."""
    if kind in _claimed:
        return _claimed[kind]
    if _claiming:
        _claimed[kind] = new_folder(base)
        return _claimed[kind]
    count = 1
    while Path(name := base if count == 1 else f"{base}_{count}").exists():
        count += 1
    return name


def made_here(path: str | Path) -> bool:
    """Whether this process made the folder ``path``."""
    return Path(path).absolute() in _made


def remove_unused() -> None:
    """Remove the folders this process made that are still empty, deepest first (a refused
    run's parents: `runs/Bogus-v0/pgpe/`); others are left as they are."""
    for path in reversed(_made):
        with contextlib.suppress(OSError):  # not empty (a run, another's folder) or gone
            path.rmdir()
    _made.clear()
