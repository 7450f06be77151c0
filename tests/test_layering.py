"""The layering of docs/design.md: sim/ imports no Celery, kombu, Redis or gRPC; workers/ no gRPC.

Imports are read with `ast` from the source, function-level ones included (a lazy import is still
a dependency). Import circles are tests/test_cli_package.py's.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def modules(package: str) -> dict[str, Path]:
    """Dotted name -> file of every module of `package` (generated API code included)."""
    out = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [("sim", ("celery", "kombu", "redis", "grpc")), ("workers", ("grpc",))],
)
def test_layering(package, forbidden):
    bad = []
    for name, path in modules(package).items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                roots = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                roots = [(node.module or "").split(".")[0]]
            else:
                continue
            bad += [f"{name} imports {r}" for r in roots if r in forbidden]
    assert bad == []
