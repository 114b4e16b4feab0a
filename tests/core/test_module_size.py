"""No module of the package is over 400 lines: a longer one is split by responsibility."""

from __future__ import annotations

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
