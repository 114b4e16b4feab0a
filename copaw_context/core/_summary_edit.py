"""Editing a summary's text in place: adding items to one section, leaving the rest as is.

Used by :func:`copaw_context.core.extractive.carry_verbatim` and
:func:`copaw_context.core.extractive.preserve_previous`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from copaw_context.core._prompt_text import SECTION_TITLES, Language
from copaw_context.core._summary_doc import (
    BULLET_PREFIX_RE,
    find_headings,
    is_placeholder,
    section_index,
    section_level,
    unwrap_code_fence,
)

__all__ = [
    "CARRY_LABELS",
    "carried_label",
    "insert_items",
    "is_present",
]

# Labels of the blocks carry_verbatim adds under Critical Context: constraints, errors,
# files, and multi-line items that an insertion could split.
CARRY_LABELS: dict[Language, tuple[str, str, str, str]] = {
    "en": ("Constraints (verbatim):", "Errors (verbatim):", "Files:", "Verbatim:"),
    "zh": ("约束（原文）：", "错误（原文）：", "文件：", "原文："),
}
_CHECKBOX_RE = re.compile(r"^\[[ xX]\]\s*")
_STARTS_ITEM_RE = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s")


def carried_label(item: str) -> int | None:
    """Which carry label (0..3, either language) starts ``item``, if any."""
    first = BULLET_PREFIX_RE.sub("", item.split("\n", 1)[0], count=1).strip()
    for labels in CARRY_LABELS.values():
        if first in labels:
            return labels.index(first)
    return None


def _line_key(line: str) -> str:
    text = _CHECKBOX_RE.sub("", BULLET_PREFIX_RE.sub("", line, count=1))
    return " ".join(text.split())


def is_present(line: str, text: str) -> bool:
    """Whether ``line`` (bullet, checkbox and spacing aside) occurs in ``text``.

    ``text`` must already have its whitespace collapsed to single spaces.
    """
    return _line_key(line) in text


def insert_items(
    text: str, index: int, items: Sequence[str], language: Language, *, replace_none: bool
) -> str:
    """Append ``items`` to the end of section ``index`` of ``text`` (created if missing).

    The section's heading level follows the summary's. With ``replace_none``, a section
    holding only placeholders such as "(none)" has them replaced. Paragraph items are
    separated by a blank line; bullets follow the last line directly.
    """
    text = unwrap_code_fence(text)
    lines = text.split("\n")
    level = section_level(lines)
    headings = find_headings(lines, level=level)
    block: list[str] = []
    for item in items:
        if block and not _STARTS_ITEM_RE.match(item):
            block.append("")
        block += item.split("\n")
    rows = [row for row, title in headings.items() if section_index(title) == index]
    if not rows:
        title = "#" * level + " " + SECTION_TITLES[language][index]
        body = "\n".join(block)
        return f"{text.rstrip()}\n\n{title}\n{body}\n" if text.strip() else f"{title}\n{body}\n"
    start = rows[0]
    following = [row for row in headings if row > start]
    end = following[0] if following else len(lines)
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    body_lines = [line for line in lines[start + 1 : end] if line.strip()]
    head = lines[:end]
    if replace_none and body_lines and all(is_placeholder(line) for line in body_lines):
        head = lines[: start + 1]
    elif len(head) > start + 1 and not _STARTS_ITEM_RE.match(block[0]):
        block = ["", *block]
    tail = lines[end:]
    if tail and tail[0].strip():
        tail = ["", *tail]
    return "\n".join([*head, *block, *tail])
