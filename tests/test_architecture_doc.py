"""docs/architecture.md names the code as it is: every file it cites exists (in the folders it
names), every class-like name it cites is defined in neurorun/, and every `module.name` it cites
is defined in a module of that name."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "neurorun"
FILE_SUFFIXES = ("csv", "pt", "json", "yaml", "log", "md", "txt", "onnx")
# config keys (`restart.strategy`) and prose objects (a logger's `context.run_dir`), not modules
NOT_MODULES = ("config", "context", "env", "algo", "problem", "network", "parallel", "logger",
               "restart", "hydra")


def _cited() -> set[str]:
    return {token.strip() for token in
            re.findall(r"`([^`\n]+)`", (ROOT / "docs" / "architecture.md").read_text())}


def _definitions() -> dict[str, set[str]]:
    """Each name a module of neurorun/ defines at any depth -> the modules' stems."""
    return {name: {Path(path).stem for path in paths}
            for name, paths in _defining_files().items()}


def _defining_files() -> dict[str, set[str]]:
    """Each name a module of neurorun/ defines at any depth -> the modules' paths."""
    defined: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            targets = ([node.name] if isinstance(node, ast.ClassDef | ast.FunctionDef) else
                       [t.id for t in node.targets if isinstance(t, ast.Name)]
                       if isinstance(node, ast.Assign) else
                       [node.target.id] if isinstance(node, ast.AnnAssign)
                       and isinstance(node.target, ast.Name) else [])
            for name in targets:
                defined.setdefault(name, set()).add(path.relative_to(ROOT).as_posix())
    return defined


def _file_paths() -> list[str]:
    return [path.relative_to(ROOT).as_posix() for folder in (PACKAGE, ROOT / "tests",
                                                             ROOT / "benchmarks")
            for path in folder.rglob("*.py")]


def test_every_file_and_name_the_architecture_cites_exists():
    paths, defined = _file_paths(), _definitions()
    files = {path.rsplit("/", 1)[-1] for path in paths}
    wrong = []
    for token in sorted(_cited()):
        cited_file = re.fullmatch(r"(?:[\w.-]+/)*[\w-]+\.py", token)
        attribute = re.fullmatch(r"([a-z_]+)\.([A-Za-z_]+)", token)
        if cited_file:  # where the doc gives folders, a file in folders of those names
            if not any(path == token or path.endswith("/" + token) for path in paths):
                wrong.append(f"file {token}")
        elif re.fullmatch(r"[A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)?", token):
            if token not in defined:
                wrong.append(f"name {token}")
        elif (attribute and f"{attribute.group(1)}.py" in files
              and attribute.group(2) not in FILE_SUFFIXES
              and attribute.group(1) not in NOT_MODULES
              and attribute.group(1) not in defined.get(attribute.group(2), set())):
            wrong.append(f"{attribute.group(2)} in a module {attribute.group(1)}.py")
    assert not wrong, wrong


def _placed() -> list[tuple[str, str]]:
    """The (name, file) pairs the doc places: "`name` (`file.py`)" and "`file.py`'s `name`"."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    return ([(name, path) for name, path in
             re.findall(r"`([A-Za-z_]\w*)` \(`((?:[\w-]+/)*[\w-]+\.py)`\)", text)]
            + [(name, path) for path, name in
               re.findall(r"`((?:[\w-]+/)*[\w-]+\.py)`'s `([A-Za-z_]\w*)`", text)])


def test_every_name_the_architecture_places_in_a_file_is_defined_there():
    placed, defined = _placed(), _defining_files()
    assert len(placed) >= 15  # the doc's pairs are read at all
    wrong = [f"{name} in {path}" for name, path in placed
             if not any(f"/{file}".endswith(f"/{path}") for file in defined.get(name, ()))]
    assert not wrong, wrong
