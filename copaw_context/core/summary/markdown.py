"""Reading summary Markdown leniently: headings, items and placeholders.

What is a heading, a bullet and code is the package's one rule
(:mod:`copaw_context.core.markdown_blocks`, shared with the memory files); this module adds
what only a summary needs. Headings are matched in either language and with common variants of
the titles (plurals, leading emoji or numbers, "&" / "/" / "and", a title followed by ": text",
a longer title that starts with a known one), so a summary written by any model maps onto the
six known sections. Sections are ``## `` headings, or ``# `` headings when the known titles are
found at that level (the Progress subsections are then one level below).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from copaw_context.core.markdown_blocks import (
    BULLET_RE,
    MarkdownBlocks,
    bullet_indent,
    parse_blocks,
)
from copaw_context.core.summary.language import PROGRESS_SUBSECTIONS, SECTION_TITLES

__all__ = [
    "BULLET_PREFIX_RE",
    "find_headings",
    "is_placeholder",
    "item_key",
    "section_index",
    "section_level",
    "split_items",
    "split_title",
    "starts_item",
    "subsection_index",
    "unwrap_code_fence",
]

BULLET_PREFIX_RE = BULLET_RE  # a bullet or list number at any depth, and its space
_CONJUNCTION_RE = re.compile(r"[&＆/+、]|and|与|和|及")
_CJK_RE = re.compile(r"[\u3400-\u9fff]")
_CHECKBOX_RE = re.compile(r"^\[[ xX]\]\s*")
_EMPHASIS_RE = re.compile(r"^([*_]{1,2})(.+)\1$")
_PLACEHOLDERS = frozenset(
    {
        *("(none)", "none", "n/a", "-", "—", "none yet", "nothing", "(nothing)", "not applicable"),
        *("无", "（无）", "(无)", "暂无", "没有", "无内容"),
    }
)


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _words(title: str) -> list[str]:
    """Normalised words of a title: no emoji, numbering, emphasis, plural -s or "and"."""
    text = _CONJUNCTION_RE.sub(" & ", title.casefold().replace("_", " "))
    words = re.findall(r"&|\w+", text)
    while words and (words[0].isdigit() or words[0] == "&"):
        words.pop(0)  # "1. Goal", "1️⃣ Goal"
    return [_singular(word) for word in words]


def _tables(
    canonical: Sequence[Sequence[str]], variants: Sequence[Sequence[str]]
) -> tuple[dict[str, int], list[tuple[list[str], int]]]:
    exact: dict[str, int] = {}
    for titles in (*canonical, *variants):
        for index, title in enumerate(titles):
            exact["".join(_words(title))] = index
    prefixes = [(_words(title), i) for titles in canonical for i, title in enumerate(titles)]
    return exact, prefixes


_SECTIONS = _tables(
    list(SECTION_TITLES.values()),
    [
        ("Objective", "Constraints", "Status", "Decisions", "Next Step", "Context"),
        ("Task", "Preferences", "Progress & Status", "Key Decision", "Todo", "Key Context"),
        ("任务", "约束", "进度", "决策", "后续步骤", "重要上下文"),
        ("任务目标", "约束条件", "当前进展", "关键决定", "下一步计划", "上下文"),
    ],
)
_SUBSECTIONS = _tables(
    list(PROGRESS_SUBSECTIONS.values()),
    [("Completed", "Ongoing", "Blockers"), ("完成", "正在进行", "阻塞")],
)


def _lookup(title: str, tables: tuple[dict[str, int], list[tuple[list[str], int]]]) -> int | None:
    words = _words(title)
    key = "".join(words)
    exact, prefixes = tables
    if key in exact:
        return exact[key]
    for known, index in prefixes:
        if words[: len(known)] == known:
            return index  # "Key Decisions Made", "Goal: build X"
        joined = "".join(known)
        if _CJK_RE.match(joined) and words and words[0].startswith(joined):
            return index  # "下一步行动": Chinese has no spaces between words
    return None


def section_index(title: str) -> int | None:
    """Index (0..5) of the summary section a heading title names, in either language."""
    return _lookup(title, _SECTIONS)


def subsection_index(title: str) -> int | None:
    """Index (0..2) of the Progress subsection a heading title names, in either language."""
    return _lookup(title, _SUBSECTIONS)


def split_title(title: str) -> tuple[str, str]:
    """("Goal", "build X") for "Goal: build X" when the part before the colon is a known
    section or subsection title; else (title, "")."""
    match = re.match(r"([^:：]*)[:：](.*)", title)
    if not match or not match.group(2).strip():
        return title, ""
    head, tail = match.groups()
    if section_index(head) is None and subsection_index(head) is None:
        return title, ""
    return head.strip(), tail.strip()


def unwrap_code_fence(text: str) -> str:
    """Strip one code fence that wraps the whole text (```markdown ... ```)."""
    stripped = text.strip()
    lines = stripped.split("\n")
    if len(lines) >= 2 and lines[0].startswith("```") and lines[-1].strip() == "```":
        return "\n".join(lines[1:-1])
    return text


def starts_item(line: str) -> bool:
    """Whether ``line`` opens an item of its own: a bullet at the start of the line (an
    indented one belongs to the item above it)."""
    return bullet_indent(line) == 0


def find_headings(
    lines: Sequence[str], *, level: int = 2, blocks: MarkdownBlocks | None = None
) -> dict[int, str]:
    """Row index -> title of each heading of ``level`` (1, 2 or 3) outside code; ``blocks``
    is the parse of ``lines`` when the caller has it."""
    if level not in (1, 2, 3):
        raise ValueError(f"level: got {level!r}; use 1, 2 or 3")
    found = blocks if blocks is not None else parse_blocks(lines)
    return {h.row: h.title for h in found.headings if h.level == level}


def section_level(lines: Sequence[str], blocks: MarkdownBlocks | None = None) -> int:
    """1 when more known section titles are ``# `` headings than ``## `` headings, else 2."""
    found = blocks if blocks is not None else parse_blocks(lines)

    def known(level: int) -> int:
        titles = find_headings(lines, level=level, blocks=found).values()
        return len({section_index(title) for title in titles} - {None})

    return 1 if known(1) > known(2) else 2


def split_items(lines: Sequence[str], blocks: MarkdownBlocks | None = None) -> list[str]:
    """The items of a section body: bullets with their continuation lines, or paragraphs; a
    code block stays in the item it follows unless it opens a bullet of its own ("- ```")
    (``blocks``: the body's blocks, when the caller parsed them)."""
    found = parse_blocks(lines) if blocks is None else blocks
    code, starts = found.code_rows, found.code_starts
    items: list[list[str]] = []
    paragraph = False
    blanks = 0
    for row, line in enumerate(lines):
        inside = row in code and row not in starts
        if inside or (row in starts and items and not blanks and not starts_item(line)):
            items[-1] += [""] * blanks + [line]
        elif not line.strip():
            blanks += 1
            continue
        elif items and (line[0] in " \t" or (paragraph and not blanks and not starts_item(line))):
            items[-1] += [""] * blanks + [line]
        else:
            items.append([line])
            paragraph = not starts_item(line)
        blanks = 0
    return ["\n".join(item).rstrip() for item in items]


def item_key(item: str) -> str:
    """The text that identifies ``item``: no bullet, checkbox or spacing differences."""
    text = _CHECKBOX_RE.sub("", BULLET_PREFIX_RE.sub("", item, count=1))
    return " ".join(text.split())


def is_placeholder(item: str) -> bool:
    """True for a placeholder item such as "(none)", "- *None*", "1. None." or "- 无"."""
    text = BULLET_PREFIX_RE.sub("", item.strip(), count=1)
    key = " ".join(_CHECKBOX_RE.sub("", text).split()).casefold()
    key = _EMPHASIS_RE.sub(r"\2", key).strip()  # emphasis only in pairs
    if key[-1:] in (".", "。") and key[:-1].strip():
        key = key[:-1].strip()
    return key in _PLACEHOLDERS
