"""No module of the package is over 400 lines: a longer one is split by responsibility."""

from __future__ import annotations

import ast
from pathlib import Path

import copaw_context

PACKAGE = Path(copaw_context.__file__).parent
MAX_LINES = 400


def module_lines() -> dict[str, int]:
    """Each module of the package (its path relative to the package) and its line count."""
    return {
        path.relative_to(PACKAGE).as_posix(): len(path.read_bytes().splitlines())
        for path in sorted(PACKAGE.rglob("*.py"))
    }


def test_no_module_is_over_400_lines() -> None:
    lines = module_lines()
    assert "core/summary/facts.py" in lines  # the walk found the subpackages
    over = [
        f"{name}: {count} lines, over {MAX_LINES}: split it by responsibility"
        for name, count in lines.items()
        if count > MAX_LINES
    ]
    assert over == [], "\n".join(over)


ADAPTERS = ("agentscope1", "agentscope2")
MAX_ADAPTER_CODE_LINES = 800


def code_lines(source: str) -> int:
    """Lines of code in ``source``: neither blank, nor a comment, nor part of a docstring
    or another bare string statement (an adapter's docs are not its logic)."""
    strings: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            strings.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return sum(
        1
        for number, line in enumerate(source.splitlines(), 1)
        if line.strip() and not line.strip().startswith("#") and number not in strings
    )


def test_code_lines_skip_docstrings_comments_and_blank_lines() -> None:
    source = (
        '"""Module doc\n\nover lines."""\n\n# a comment\nx = 1\n\n\n'
        'def f():\n    """Doc."""\n    return "a"\n'
    )
    assert code_lines(source) == 3


def test_each_adapter_has_under_800_lines_of_code() -> None:
    counts = {
        adapter: sum(
            code_lines(path.read_text(encoding="utf-8"))
            for path in sorted((PACKAGE / adapter).glob("*.py"))
        )
        for adapter in ADAPTERS
    }
    assert all(count > 100 for count in counts.values()), counts  # the walk found them
    over = {name: count for name, count in counts.items() if count >= MAX_ADAPTER_CODE_LINES}
    assert over == {}, (
        f"adapters over {MAX_ADAPTER_CODE_LINES} lines of code: {over}; move policy to core"
    )


def test_the_architecture_doc_gives_the_adapters_sizes_of_today() -> None:
    doc = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    for adapter in ADAPTERS:
        paths = sorted((PACKAGE / adapter).glob("*.py"))
        code = sum(code_lines(path.read_text(encoding="utf-8")) for path in paths)
        total = sum(len(path.read_bytes().splitlines()) for path in paths)
        assert f"`{adapter}/` {code} ({total:,}" in doc.replace("\n  ", " "), (adapter, code, total)
