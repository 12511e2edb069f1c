"""The package's shape (issue 31): no import cycle among framestream's modules.

Pure: every module is parsed with `ast`, none is imported. Every import counts, wherever it is written: at the
top, inside a function, under `if TYPE_CHECKING:`; and importing a module inside a package runs the package's
__init__ first, so that counts too. A cycle there still ties the modules together (one cannot be
read, tested or moved without the other), even when Python happens to resolve it at run time.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = "framestream"
ROOT = Path(__file__).resolve().parent.parent / PACKAGE


def module_files() -> dict[str, Path]:
    """Dotted module name -> its file (a package is its __init__.py)."""
    modules = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def imported_modules(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The framestream modules `name` imports: `from pkg import module` counts as the module, `from module import
    thing` as the module, and a relative import is resolved against the module's package."""
    package = name if _is_package(path) else name.rpartition(".")[0]
    found: set[str] = set()

    def add(target: str) -> None:
        # The nearest enclosing module that exists: `import framestream.a.b` names a.b; a name of no module
        # (a function imported from a package) falls back to the package it came from.
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)
        # Importing a.b.c runs the __init__ of a.b first: an edge too, unless it is a package of this module's own
        # (already running by the time this module is).
        parts = target.split(".")
        for depth in range(2, len(parts)):
            package_name = ".".join(parts[:depth])
            if package_name in modules and not (name + ".").startswith(package_name + "."):
                found.add(package_name)

    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == PACKAGE or alias.name.startswith(PACKAGE + "."):
                    add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                if node.level > 1:
                    base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if not (source == PACKAGE or source.startswith(PACKAGE + ".")):
                continue
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                add(submodule if submodule in modules else source)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = module_files()
    return {name: imported_modules(name, path, modules) for name, path in modules.items()}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each as one cycle through it."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_one_cycle(graph, component) for component in components]


def _one_cycle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """A shortest cycle through the component's first module, to name in the failure."""
    start = component[0]
    members = set(component)
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for nxt in sorted(graph[node] & members):
            if nxt == start:
                return paths[node] + [start]
            if nxt not in paths:
                paths[nxt] = paths[node] + [nxt]
                queue.append(nxt)
    return component


def test_imports_inside_functions_under_type_checking_and_relative_ones_count(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    files = {"framestream.a": tmp_path / "a.py", "framestream.b": tmp_path / "b.py",
             "framestream.pkg": tmp_path / "pkg" / "__init__.py", "framestream.pkg.c": tmp_path / "pkg" / "c.py"}
    files["framestream.a"].write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from framestream.b import B\n"
        "def f():\n    from .pkg import c\n")
    files["framestream.b"].write_text("from framestream.pkg.c import C\n")
    files["framestream.pkg"].write_text("")
    files["framestream.pkg.c"].write_text("from .. import a\nfrom ..b import thing\nfrom . import helper\n")
    graph = {name: imported_modules(name, path, files) for name, path in files.items()}
    assert graph == {"framestream.a": {"framestream.b", "framestream.pkg.c", "framestream.pkg"},
                     "framestream.b": {"framestream.pkg.c", "framestream.pkg"}, "framestream.pkg": set(),
                     "framestream.pkg.c": {"framestream.a", "framestream.b", "framestream.pkg"}}
    assert import_cycles(graph) == [["framestream.a", "framestream.pkg.c", "framestream.a"]]


def test_no_import_cycle_among_framestream_modules() -> None:
    cycles = import_cycles(import_graph())
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(cycle) for cycle in cycles)


MAX_MODULE_LINES = 400


def test_no_module_is_over_400_lines() -> None:
    sizes = {name: len(path.read_text().splitlines()) for name, path in module_files().items()}
    long = {name: n for name, n in sizes.items() if n > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split them by job): {long}"


def test_the_performance_page_and_the_recorded_results_stay_short() -> None:
    repo = ROOT.parent
    page = len((repo / "docs" / "performance.md").read_text().splitlines())
    assert page <= 400, f"docs/performance.md is {page} lines: the latest results belong there, history in git"
    results = [p.name for p in (repo / "benchmarks" / "results").iterdir() if p.is_file() and p.suffix == ".json"]
    assert len(results) <= 10, f"benchmarks/results holds {len(results)} files: record only what the docs quote"
