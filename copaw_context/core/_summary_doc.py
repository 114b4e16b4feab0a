"""Reading a Markdown summary: ``## `` sections, ``### `` subsections and code fences.

Headings are matched in either language and with common variants of the titles, so a
summary written by any model maps onto the six known sections.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from copaw_context.core._prompt_text import PROGRESS_SUBSECTIONS, SECTION_TITLES

__all__ = [
    "BULLET_PREFIX_RE",
    "FENCE_RE",
    "find_headings",
    "parse_sections",
    "section_index",
    "subsection_index",
    "unwrap_code_fence",
]

_HEADING_RE = re.compile(r"^##(?!#)[ \t]*(.*?)[ \t]*#*[ \t]*$")
_SUBHEADING_RE = re.compile(r"^###(?!#)[ \t]*(.*?)[ \t]*#*[ \t]*$")
FENCE_RE = re.compile(r"^\s*```")
BULLET_PREFIX_RE = re.compile(r"^\s*(?:[-*+•]|\d+[.)、])\s+")


def _title_key(title: str) -> str:
    key = re.sub(r"^\s*\d+\s*[.)、]\s*", "", title.strip())
    key = key.casefold().replace("&", "and").replace("＆", "and")
    return re.sub(r"[\s*_`:：.。\-]+", "", key)


def _keys(groups: Sequence[Sequence[str]], extra: Sequence[Sequence[str]]) -> dict[str, int]:
    table: dict[str, int] = {}
    for titles in (*groups, *extra):
        for index, title in enumerate(titles):
            table[_title_key(title)] = index
    return table


_SECTION_KEYS = _keys(
    list(SECTION_TITLES.values()),
    [
        ("Objective", "Constraints", "Status", "Decisions", "Next Step", "Context"),
        ("Task", "Preferences", "Progress & Status", "Key Decision", "Todo", "Key Context"),
        ("任务", "约束", "进度", "决策", "后续步骤", "重要上下文"),
        ("任务目标", "约束和偏好", "当前进展", "关键决定", "下一步计划", "上下文"),
    ],
)
_SUBSECTION_KEYS = _keys(
    list(PROGRESS_SUBSECTIONS.values()),
    [("Completed", "Ongoing", "Blockers"), ("完成", "正在进行", "阻塞")],
)


def section_index(title: str) -> int | None:
    """Index (0..5) of the summary section a ``## `` title names, in either language."""
    return _SECTION_KEYS.get(_title_key(title))


def subsection_index(title: str) -> int | None:
    """Index (0..2) of the Progress subsection a ``### `` title names, in either language."""
    return _SUBSECTION_KEYS.get(_title_key(title))


def unwrap_code_fence(text: str) -> str:
    """Strip one code fence that wraps the whole text (```markdown ... ```)."""
    stripped = text.strip()
    lines = stripped.split("\n")
    if len(lines) >= 2 and lines[0].startswith("```") and lines[-1].strip() == "```":
        return "\n".join(lines[1:-1])
    return text


def find_headings(lines: Sequence[str], *, level: int = 2) -> dict[int, str]:
    """Row index -> title of each ``## `` (or ``### `` for level 3) heading outside code fences."""
    pattern = _HEADING_RE if level == 2 else _SUBHEADING_RE
    found: dict[int, str] = {}
    in_fence = False
    for row, line in enumerate(lines):
        if FENCE_RE.match(line):
            in_fence = not in_fence
        match = None if in_fence else pattern.match(line)
        if match:
            found[row] = match.group(1)
    return found


def parse_sections(text: str) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """Split text into (preamble lines, [(``## `` title, body lines)]), ignoring code fences."""
    lines = unwrap_code_fence(text).split("\n")
    headings = find_headings(lines)
    preamble: list[str] = []
    sections: list[tuple[str, list[str]]] = []
    for row, line in enumerate(lines):
        if row in headings:
            sections.append((headings[row], []))
        elif sections:
            sections[-1][1].append(line)
        else:
            preamble.append(line)
    return preamble, sections
