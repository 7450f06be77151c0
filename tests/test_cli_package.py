"""The CLI is a package without import circles: the command modules import what
they share from `service.cli.common`, never each other's private names, and nothing in `service/`
imports back in a circle."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph(*packages: str) -> dict[str, set[str]]:
    """Module -> the project modules it imports (anywhere in its body, lazy imports included)."""
    files = {module_name(p): p for pkg in packages for p in (REPO / pkg).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = graph.setdefault(name, set())
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                # `from pkg import mod` imports the module pkg.mod; `from mod import name`, mod
                targets = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names
                ]
            else:
                continue
            edges.update(t for t in targets if t in files and t != name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_sees_relative_and_lazy_imports():
    graph = import_graph("service")
    assert "service.cli.common" in graph["service.cli.jobs"]  # from .common import …
    assert "service.client" in graph["service.cli.common"]  # a lazy `from ..client import Client`
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circles_in_service():
    assert cycles(import_graph("service", "sim")) == []


def test_no_import_circles_in_workers():
    assert cycles(import_graph("workers", "sim")) == []


def test_common_imports_no_command_module():
    graph = import_graph("service")
    cli = {m for m in graph if m.startswith("service.cli.")}
    assert not graph["service.cli.common"] & cli
    # the launcher of the local stack knows nothing of the commands that drive it
    assert not {m for m in graph["service.stack"] if m.startswith("service.cli")}
    # and no command module reaches another's private names
    for name in cli:
        path = REPO / (name.replace(".", "/") + ".py")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level:
                private = [a.name for a in node.names if a.name.startswith("_")]
                assert not private, f"{name} imports private {private} from {node.module}"
