"""The package's layers (docs/architecture.md, "Layers"): a folder imports only folders below
its own, so no import points up and no two folders import each other.

Every import of a neurorun module counts, function-level ones too (a deferred import is still
an arrow); imports under ``if TYPE_CHECKING:`` do not (they never run).
"""

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import neurorun

PACKAGE = Path(neurorun.__file__).parent

# top first; a folder may import the folders of the tiers below its own, and its own modules.
# problems/ has three tiers of its own: the evaluator (problem.py, from_config.py and the
# package's exports) runs the compiled evaluation (problems/jax/), which runs the shared
# rules (schedule, options, rollout, returns, running_norm, memory, ...).
TIERS = [
    ("cli",),
    ("loop", "tools"),
    ("config",),
    ("loggers", "parallel"),
    ("record",),
    ("problems:evaluator",),
    ("problems.jax",),
    ("problems",),
    ("algorithms", "nets", "envs"),
    ("common", "conf"),
    ("neurorun",),  # the package root: __version__; it imports nothing
]
TIER = {folder: rank for rank, folders in enumerate(TIERS) for folder in folders}
EVALUATOR = {"neurorun.problems", "neurorun.problems.problem", "neurorun.problems.from_config"}


def folder_of(module: str) -> str:
    """The folder a dotted module lives in, as TIERS names it."""
    parts = module.split(".")
    if len(parts) == 1:
        return "neurorun"
    if parts[1] == "__main__":  # `python -m neurorun`: the command, as cli/ is
        return "cli"
    if parts[1] == "problems":
        if parts[2:3] == ["jax"]:
            return "problems.jax"
        return "problems:evaluator" if module in EVALUATOR else "problems"
    return parts[1] if len(parts) > 2 or (PACKAGE / parts[1]).is_dir() else "(top level)"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def path_of(module: str) -> Path:
    """The file of a dotted module: its package's __init__.py or its .py."""
    path = PACKAGE.parent.joinpath(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def is_module(dotted: str) -> bool:
    return path_of(dotted).is_file()


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports_of(source: str, package: str, where: str = "anywhere") -> list[tuple[int, str]]:
    """(line, module) of each neurorun module the source imports, except under
    ``if TYPE_CHECKING:``; ``package``: the importing module's package (for relative imports).
    ``where``: "anywhere", "top" (what runs on import: not inside a function) or "deferred"
    (inside a function)."""
    found = []

    def visit(node: ast.AST, deferred: bool = False) -> None:
        if isinstance(node, ast.If) and _type_checking(node):
            for child in node.orelse:
                visit(child, deferred)
            return
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            deferred = True
        if where != "anywhere" and deferred != (where == "deferred"):
            for child in ast.iter_child_nodes(node):
                visit(child, deferred)
            return
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                whole = f"{base}.{alias.name}"
                found.append((node.lineno, whole if is_module(whole) else base))
        for child in ast.iter_child_nodes(node):
            visit(child, deferred)

    visit(ast.parse(source))
    return sorted({(line, name) for line, name in found if name.split(".")[0] == "neurorun"})


def package_imports(where: str = "anywhere") -> Iterator[tuple[Path, int, str, str]]:
    """(file, line, importing module, imported module) of every import of the package."""
    for path in sorted(PACKAGE.rglob("*.py")):
        name = module_name(path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for line, target in imports_of(path.read_text(), package, where):
            yield path, line, name, target


@functools.cache
def loaded_on_import(module: str) -> frozenset[str]:
    """The neurorun modules importing ``module`` loads: its packages, and what their top
    levels import, followed to the end."""
    loaded: set[str] = set()
    pending = [module]
    while pending:
        name = pending.pop()
        parts = name.split(".")
        for whole in (".".join(parts[:i]) for i in range(1, len(parts) + 1)):
            if whole in loaded or not is_module(whole):
                continue
            loaded.add(whole)
            path = path_of(whole)
            package = whole if path.name == "__init__.py" else whole.rpartition(".")[0]
            pending += [target for _, target in imports_of(path.read_text(), package, "top")]
    return frozenset(loaded)


def arrows() -> list[tuple[str, int, str, str, str]]:
    """(file, line, imported module, from folder, to folder) of every import between folders."""
    return [(str(path.relative_to(PACKAGE.parent)), line, target, folder_of(name),
             folder_of(target))
            for path, line, name, target in package_imports()
            if folder_of(target) != folder_of(name)]


def test_nothing_is_loose_at_the_top():
    loose = sorted(p.name for p in PACKAGE.glob("*.py")
                   if p.name not in ("__init__.py", "__main__.py"))
    assert loose == [], f"modules at the top of neurorun/, outside every folder: {loose}"


def test_every_folder_has_a_tier():
    folders = {folder_of(module_name(p)) for p in PACKAGE.rglob("*.py")}
    assert folders - set(TIER) == set()


def test_no_import_points_up_or_sideways():
    wrong = [f"{file}:{line} imports {target} ({source} -> {to})"
             for file, line, target, source, to in arrows()
             if to not in TIER or TIER[to] <= TIER.get(source, -1)]
    assert wrong == [], "imports against the layers (a folder imports only the tiers below " \
        "its own):\n" + "\n".join(wrong)


def test_no_two_folders_import_each_other():
    edges = {(source, to) for _, _, _, source, to in arrows()}
    assert sorted(f"{a} <-> {b}" for a, b in edges if (b, a) in edges and a < b) == []


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or round a loop (Tarjan's
    strongly connected components of more than one module)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in edges.get(module, ()):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = []
            while not group or group[-1] != module:
                group.append(stack.pop())
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return found


def test_no_modules_of_one_folder_import_each_other():
    """Inside a folder too, deferred imports included: a circle held apart only by an import
    inside a function is still a circle."""
    edges: dict[str, set[str]] = {}
    for _, _, name, target in package_imports():
        if folder_of(target) == folder_of(name) and target != name:
            edges.setdefault(name, set()).add(target)
    assert circles(edges) == []


def test_a_circle_is_found_round_a_loop():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_the_walk_counts_deferred_imports_and_leaves_out_type_only_ones():
    source = ("from typing import TYPE_CHECKING\n"
              "from neurorun.loop import runner\n"
              "import neurorun.common.atomic as atomic\n"
              "if TYPE_CHECKING:\n"
              "    from neurorun.cli.app import main\n"
              "def f():\n"
              "    from neurorun.record.layout import LOG_FILE\n"
              "    from . import seeding\n")
    assert imports_of(source, "neurorun.common") == [
        (2, "neurorun.loop.runner"), (3, "neurorun.common.atomic"),
        (7, "neurorun.record.layout"), (8, "neurorun.common.seeding")]
    assert folder_of("neurorun.problems.jax.rollout") == "problems.jax"
    assert folder_of("neurorun.problems.problem") == "problems:evaluator"
    assert folder_of("neurorun.problems.schedule") == "problems"


def test_a_function_level_import_loads_what_the_file_has_not():
    """An import inside a function defers loading a module (jax, envpool, ray and torch are
    loaded only where a run needs them); one of a module the file's own imports already load
    defers nothing and only hides a dependency: it belongs at the top."""
    pointless = [f"{path.relative_to(PACKAGE.parent)}:{line} imports {target}, which "
                 f"importing {name} already loads"
                 for path, line, name, target in package_imports("deferred")
                 if target in loaded_on_import(name)]
    assert pointless == []


def test_the_walk_tells_top_level_from_deferred_imports():
    source = ("from neurorun.loop import runner\n"
              "class A:\n"
              "    from neurorun.common import atomic\n"
              "    def f(self):\n"
              "        from neurorun.record.layout import LOG_FILE\n")
    assert imports_of(source, "neurorun", "top") == [
        (1, "neurorun.loop.runner"), (3, "neurorun.common.atomic")]
    assert imports_of(source, "neurorun", "deferred") == [(5, "neurorun.record.layout")]
    assert {"neurorun", "neurorun.record", "neurorun.record.layout",
            "neurorun.common.files"} <= loaded_on_import("neurorun.record.layout")
    assert "neurorun.loop.runner" not in loaded_on_import("neurorun.record.layout")
