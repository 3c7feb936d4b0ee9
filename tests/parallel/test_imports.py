"""The modules of neurorun.parallel import each other one way only (no circle)."""

import ast
from pathlib import Path

import neurorun.parallel

FOLDER = Path(neurorun.parallel.__file__).parent


def imported(path: Path) -> set[str]:
    """The neurorun.parallel modules ``path`` imports, at any level of the file."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module == "neurorun.parallel":
            names.update(f"neurorun.parallel.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "neurorun.parallel."):
            names.add(node.module)
    return names


def test_no_two_modules_of_parallel_import_each_other():
    arrows = {f"neurorun.parallel.{path.stem}": imported(path) for path in FOLDER.glob("*.py")
              if path.stem != "__init__"}
    circles = sorted((a, b) for a, targets in arrows.items() for b in targets
                     if a < b and a in arrows.get(b, set()))
    assert circles == []
