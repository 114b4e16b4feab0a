"""One Markdown parser (markdown-it-py, CommonMark) for the package's block structure.

The memory edit checks, the MEMORY.md section parser and the summary heading parser all ask
this module which lines are top-level ATX headings and which lie inside code (fenced or
indented), so they never disagree about an unclosed fence, an indented fence or a ``## ``
line inside a code block.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from markdown_it import MarkdownIt

__all__ = ["Heading", "MarkdownBlocks", "parse_blocks"]

_PARSER = MarkdownIt("commonmark")


@dataclass(frozen=True)
class Heading:
    """A top-level ATX heading: its line index, level (1-6) and title text."""

    row: int
    level: int
    title: str


@dataclass(frozen=True)
class MarkdownBlocks:
    """The block structure of a text: top-level ATX headings and code lines."""

    headings: tuple[Heading, ...]
    code_rows: frozenset[int]  # lines inside a code block (fence lines included)
    unclosed_fence: int | None  # line of a fence that runs to the end of the text

    def heading_rows(self, max_level: int = 6) -> dict[int, Heading]:
        """Row -> heading for the headings of level ``max_level`` or less."""
        return {h.row: h for h in self.headings if h.level <= max_level}


def parse_blocks(lines: Sequence[str] | str) -> MarkdownBlocks:
    """Parse ``lines`` (a text or its lines split at ``\\n``) with the one Markdown parser."""
    rows = lines.split("\n") if isinstance(lines, str) else list(lines)
    tokens = _PARSER.parse("\n".join(rows))
    headings: list[Heading] = []
    code: set[int] = set()
    unclosed: int | None = None
    for index, token in enumerate(tokens):
        if token.map is None:
            continue
        start, end = token.map
        if token.type == "heading_open" and token.level == 0 and token.markup.startswith("#"):
            inline = tokens[index + 1] if index + 1 < len(tokens) else None
            title = inline.content.strip() if inline is not None else ""
            headings.append(Heading(start, int(token.tag[1:]), title))
        elif token.type in ("fence", "code_block"):
            code.update(range(start, end))
            if token.type == "fence" and _unclosed(rows, start, end, token.markup):
                unclosed = start
    return MarkdownBlocks(tuple(headings), frozenset(code), unclosed)


def _unclosed(rows: Sequence[str], start: int, end: int, markup: str) -> bool:
    """Whether the fence opened at ``start`` has no closing line (it runs to the end)."""
    if end - start < 2:
        return True
    last = rows[end - 1].strip() if end - 1 < len(rows) else ""
    return not (len(last) >= len(markup) and set(last) == {markup[0]})
