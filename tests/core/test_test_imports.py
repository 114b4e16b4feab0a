"""No test module imports another: what tests share lives in helper modules (kits, doubles,
data), so running, moving or deleting one test file never changes another."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).parents[1]


def _imported_test_modules(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        modules: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module:
            modules = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        for module in modules:
            last = module.rsplit(".", 1)[-1]
            if module.startswith("tests.") and (last.startswith("test_") or last == "conftest"):
                found.append(module)
    return found


def test_no_test_module_imports_another() -> None:
    offenders = {
        str(path.relative_to(TESTS)): _imported_test_modules(path)
        for path in TESTS.rglob("*.py")
        if _imported_test_modules(path)
    }
    assert offenders == {}
