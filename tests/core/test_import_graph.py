"""The package's imports form a DAG: no module imports, directly or not, one that imports it.

Every import counts, also those under ``if TYPE_CHECKING:`` and those inside functions (a
lazy import is a circle put off, not removed). Importing ``a.b.c`` runs the ``__init__`` of
each package on the way, so that is an import of those packages too (except the packages
the importing module sits in, whose ``__init__`` is already running).
"""

from __future__ import annotations

import ast
from pathlib import Path

import copaw_context

ROOT = Path(copaw_context.__file__).parent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(name: str, path: Path, modules: set[str]) -> set[str]:
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:
                member = f"{module}.{alias.name}"
                targets.add(member if member in modules else module)
        elif isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
    edges: set[str] = set()
    for target in targets:
        parts = target.split(".")
        if target in modules:
            edges.add(target)
        for depth in range(1, len(parts)):
            parent = ".".join(parts[:depth])
            if parent in modules and package[:depth] != parts[:depth]:
                edges.add(parent)
    edges.discard(name)
    return edges


def import_graph() -> dict[str, set[str]]:
    """Each ``copaw_context`` module and the package modules it imports."""
    paths = {_module_name(p): p for p in ROOT.rglob("*.py")}
    modules = set(paths)
    return {name: _imports(name, path, modules) for name, path in paths.items()}


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for other in sorted(graph[module]):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in on_stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return circles


def test_the_package_has_no_import_circle() -> None:
    graph = import_graph()
    assert len(graph) > 100  # the walk found the package
    assert import_circles(graph) == []


def test_the_walk_finds_a_circle_through_a_package_init() -> None:
    graph = {
        "p": {"p.engine"},  # p/__init__.py re-exports the engine
        "p.engine": {"p.steps"},
        "p.steps": {"p"},  # a step imports the package: p/__init__ runs first
        "p.leaf": set(),
    }
    assert import_circles(graph) == [["p", "p.engine", "p.steps"]]


def test_the_steps_import_neither_the_engine_nor_a_host() -> None:
    graph = import_graph()
    for name, imported in graph.items():
        if name.startswith(("copaw_context.core.steps", "copaw_context.core.context")):
            assert not {m for m in imported if m.startswith("copaw_context.core.engine")}, name
            assert not {m for m in imported if m.startswith("copaw_context.agentscope")}, name


def test_the_step_context_imports_no_step() -> None:
    graph = import_graph()
    for name, imported in graph.items():
        if name.startswith("copaw_context.core.context"):
            steps = {
                m
                for m in imported
                if m.startswith(("copaw_context.core.steps", "copaw_context.core.commands"))
            }
            assert not steps, f"{name} imports {sorted(steps)}"
