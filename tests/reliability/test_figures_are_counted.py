"""The figures ``docs/reliability.md`` reports are counted by the tests that report them:
no ``record(...)`` call in ``tests/reliability`` passes a literal number or boolean."""

from __future__ import annotations

import ast
from pathlib import Path

_HERE = Path(__file__).parent


def literal_figures(source: str, name: str) -> list[str]:
    """``file:line key=value`` for each literal figure passed to ``record``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "record"):
            continue
        for keyword in node.keywords:
            value = keyword.value
            if isinstance(value, ast.Constant) and isinstance(value.value, int | float):
                found.append(f"{name}:{node.lineno} {keyword.arg}={value.value!r}")
    return found


def test_no_reliability_figure_is_a_constant() -> None:
    written = [
        found
        for path in sorted(_HERE.glob("*.py"))
        for found in literal_figures(path.read_text(encoding="utf-8"), path.name)
    ]
    assert written == [], f"figures written by hand, not counted: {written}"


def test_the_check_sees_a_constant_figure() -> None:
    source = "record('t', tried=len(x), lost=0, ok=True, ratio=0.5)\n"
    expected = ["f.py:1 lost=0", "f.py:1 ok=True", "f.py:1 ratio=0.5"]
    assert literal_figures(source, "f.py") == expected
