"""The one Markdown helper for the package's block structure: headings, code, bullets, sections.

The summary parser (``core/summary/markdown.py``), the MEMORY.md section parser and the memory
edit checks (``core/memory/``) all ask this module the same three questions, so they never
disagree about a document:

- which lines are code: markdown-it-py (CommonMark) decides, fenced or indented, so an
  unclosed or indented fence is read the same everywhere;
- which lines are headings: :func:`heading_of` on every line outside code. An ATX heading is
  up to three spaces, one to six ``#`` and a space (or the end of the line); from ``##`` on,
  the title may follow the marks directly (``##目标``: models writing Chinese often do). It
  counts wherever it stands, also inside an HTML block such as ``<summary>``;
- which lines are bullets: :data:`BULLET_RE` (``-``, ``*``, ``+``, ``•`` or a number with
  ``.``, ``)`` or ``、``, then a space), with its indentation, so each reader applies the one
  rule at the depth it nests items (:func:`bullet_indent`).

:func:`section_bounds` splits the lines at a set of heading rows; each reader picks the rows
(the summary its section level, MEMORY.md its ``#`` and ``##`` headings).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from markdown_it import MarkdownIt

__all__ = [
    "BULLET_RE",
    "Heading",
    "MarkdownBlocks",
    "bullet_indent",
    "fence_closer",
    "heading_of",
    "parse_blocks",
    "section_bounds",
]

_PARSER = MarkdownIt("commonmark")
_ATX_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?)|(?<=##)([^#\s].*?)|)[ \t]*$")
_CLOSING_RE = re.compile(r"(?:^|[ \t]+)#+$")
BULLET_RE = re.compile(r"^([^\S\n]*)(?:[-*+•]|\d{1,9}[.)、])[^\S\n]+")
"""A bullet or list number and the space after it, with its indentation (group 1)."""


@dataclass(frozen=True)
class Heading:
    """An ATX heading: its line index, level (1-6) and title text."""

    row: int
    level: int
    title: str


@dataclass(frozen=True)
class MarkdownBlocks:
    """The block structure of a text: its headings and code lines."""

    headings: tuple[Heading, ...]
    code_rows: frozenset[int]  # lines inside a code block (fence lines included)
    code_starts: frozenset[int]  # the first line of each code block
    unclosed_fence: int | None  # line of a fence that runs to the end of the text

    def heading_rows(self, max_level: int = 6) -> dict[int, Heading]:
        """Row -> heading for the headings of level ``max_level`` or less."""
        return {h.row: h for h in self.headings if h.level <= max_level}


def heading_of(line: str) -> tuple[int, str] | None:
    """(level, title) when ``line`` is an ATX heading (whatever surrounds it), else None."""
    match = _ATX_RE.match(line)
    if match is None:
        return None
    title = match.group(2) if match.group(2) is not None else match.group(3) or ""
    return len(match.group(1)), _CLOSING_RE.sub("", title.strip()).strip()


def bullet_indent(line: str) -> int | None:
    """The indentation of a bullet line (0 when it starts the line), None for other lines."""
    match = BULLET_RE.match(line)
    return None if match is None else len(match.group(1))


def parse_blocks(lines: Sequence[str] | str) -> MarkdownBlocks:
    """Parse ``lines`` (a text or its lines split at ``\\n``) with the one Markdown parser."""
    rows = lines.split("\n") if isinstance(lines, str) else list(lines)
    code: set[int] = set()
    starts: set[int] = set()
    unclosed: int | None = None
    for token in _PARSER.parse("\n".join(rows)):
        if token.map is None or token.type not in ("fence", "code_block"):
            continue
        start, end = token.map
        code.update(range(start, end))
        starts.add(start)
        if token.type == "fence" and _unclosed(rows, start, end, token.markup):
            unclosed = start
    headings = tuple(
        Heading(row, *found)
        for row, line in enumerate(rows)
        if row not in code and (found := heading_of(line)) is not None
    )
    return MarkdownBlocks(headings, frozenset(code), frozenset(starts), unclosed)


def fence_closer(text: str) -> str:
    """The fence line that closes a code fence ``text`` leaves open ("" when none is): a cut
    inside a code block must not turn what follows it into code."""
    if "```" not in text and "~~~" not in text:
        return ""  # no fence at all: spare the parse
    blocks = parse_blocks(text)
    if blocks.unclosed_fence is None:
        return ""
    line = text.split("\n")[blocks.unclosed_fence].lstrip()
    return line[: len(line) - len(line.lstrip(line[0]))]


def section_bounds(rows: Sequence[int], end: int) -> Iterator[tuple[int, int]]:
    """(heading row, end of its body) for each of the sorted heading ``rows`` of a text of
    ``end`` lines: a section runs to the next of ``rows``."""
    for n, row in enumerate(rows):
        yield row, rows[n + 1] if n + 1 < len(rows) else end


def _unclosed(rows: Sequence[str], start: int, end: int, markup: str) -> bool:
    """Whether the fence opened at ``start`` has no closing line (it runs to the end)."""
    if end - start < 2:
        return True
    last = rows[end - 1].strip() if end - 1 < len(rows) else ""
    return not (len(last) >= len(markup) and set(last) == {markup[0]})
