"""Markdown helpers for the memory files: ``## sections``, log entries and bullets.

Pure text functions (no I/O), shared by the file store, the summariser and consolidation.
Headings, bullets and code are the package's one rule (:mod:`copaw_context.core.markdown_blocks`,
shared with the summary parser); a log entry starts at a bullet indented at most three spaces
(a deeper one is part of the entry above it, as CommonMark reads it).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime

from copaw_context.core.markdown_blocks import (
    BULLET_RE,
    bullet_indent,
    heading_of,
    parse_blocks,
    section_bounds,
)
from copaw_context.core.toolresults.truncation import scrub_surrogates

__all__ = [
    "MarkdownSection",
    "bullet_key",
    "entry_items",
    "format_log_entry",
    "log_entry_text",
    "normalise_text",
    "replace_section",
    "section_titles",
    "split_sections",
]

_MAX_ENTRY_INDENT = 3  # a bullet indented more continues the entry above it
_LOG_PREFIX = re.compile(r"^(?:\d{1,2}:\d{2}(?::\d{2})?\s+)?(?:\[[^\]\n]{1,40}\]\s+)?")
_SPACES = re.compile(r"\s+")
_KIND_LABEL = re.compile(r"^(?:preference|lesson|偏好|经验)\s*[:：]\s*")


@dataclass(frozen=True)
class MarkdownSection:
    """A ``## title`` section of a Markdown file: its heading line index and body lines.

    ``title`` is ``None`` for the part before the first level-2 heading.
    """

    title: str | None
    start: int  # index of the heading line (or 0 for the preamble)
    end: int  # index one past the last body line


def normalise_text(text: str) -> str:
    """Unify line ends, drop a leading byte order mark (an editor's UTF-8 signature, which
    would hide the first heading) and replace lone surrogates, so the text can be written as
    UTF-8."""
    text = text.removeprefix("\ufeff")
    return scrub_surrogates(text.replace("\r\n", "\n").replace("\r", "\n"))


def split_sections(text: str) -> tuple[list[str], list[MarkdownSection]]:
    """The lines of ``text`` and its sections split at ``#`` and ``##`` headings.

    A ``#`` heading ends the section before it and belongs to no named section.
    """
    lines = text.split("\n")
    headings = parse_blocks(lines).heading_rows(max_level=2)
    rows = sorted(headings)
    sections = [MarkdownSection(None, 0, rows[0] if rows else len(lines))]
    for row, end in section_bounds(rows, len(lines)):
        heading = headings[row]
        sections.append(MarkdownSection(heading.title if heading.level == 2 else None, row, end))
    return lines, [s for s in sections if s.title is not None or s.end > s.start]


def _same_title(left: str, right: str) -> bool:
    return _SPACES.sub(" ", left).strip().casefold() == _SPACES.sub(" ", right).strip().casefold()


def section_titles(text: str) -> list[str]:
    """The titles of the ``##`` sections of ``text``, in order."""
    return [s.title for s in split_sections(text)[1] if s.title is not None]


def replace_section(text: str, title: str, content: str, *, add: bool) -> str:
    """``text`` with section ``title`` given ``content`` (appended when ``add``, else replacing
    its body); a missing section is created at the end. Titles match case-insensitively."""
    lines, sections = split_sections(text)
    body = content.strip("\n")
    target = next((s for s in sections if s.title and _same_title(s.title, title)), None)
    if target is None:
        kept = text.rstrip("\n")
        prefix = f"{kept}\n\n" if kept else ""
        return f"{prefix}## {title}\n\n{body}\n" if body else f"{prefix}## {title}\n"
    old_body = lines[target.start + 1 : target.end]
    while old_body and not old_body[-1].strip():
        old_body.pop()
    if add:
        while old_body and not old_body[0].strip():
            old_body.pop(0)
        new_body = [*old_body, *body.split("\n")] if old_body else body.split("\n")
    else:
        new_body = body.split("\n") if body else []
    block = [lines[target.start], "", *new_body] if new_body else [lines[target.start]]
    after = lines[target.end :]
    if after and any(line.strip() for line in after):
        block.append("")
    merged = [*lines[: target.start], *block, *after]
    result = "\n".join(merged).rstrip("\n")
    return result + "\n"


def entry_items(text: str) -> list[list[str]]:
    """Split ``text`` into list items: a ``-``/``*``/``1.`` line starts one, other lines continue
    it (a text without bullets is one item); a heading is an item of its own. Bullet markers
    are removed; blank lines dropped."""
    items: list[list[str]] = []
    for line in normalise_text(text).split("\n"):
        if not line.strip():
            continue
        indent = bullet_indent(line)
        bullet = indent is not None and indent <= _MAX_ENTRY_INDENT
        if bullet or not items or heading_of(line) or heading_of(items[-1][0]):
            items.append([(BULLET_RE.sub("", line, count=1) if bullet else line).strip()])
        else:
            items[-1].append(line.rstrip())
    return [item for item in items if item[0]]


def format_log_entry(text: str, source: str, when: datetime) -> str:
    """``text`` as daily-log lines: ``- HH:MM [source] first line`` per item, continuation
    lines indented by two spaces. Returns "" when ``text`` has no content."""
    stamp = when.strftime("%H:%M")
    out: list[str] = []
    for first, *rest in entry_items(text):
        out.append(f"- {stamp} [{source}] {first}")
        out.extend(f"  {line.strip()}" for line in rest)
    return "\n".join(out) + "\n" if out else ""


def log_entry_text(item: list[str]) -> str:
    """The content of a log item without the ``HH:MM [source]`` prefix, lines joined."""
    first = _LOG_PREFIX.sub("", item[0], count=1)
    return " ".join([first, *(line.strip() for line in item[1:])]).strip()


def bullet_key(text: str) -> str:
    """A comparison key for duplicate bullets: case, width, spacing, end punctuation and a
    leading "Preference:" / "Lesson:" (偏好： / 经验：) label ignored."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    folded = _KIND_LABEL.sub("", _SPACES.sub(" ", folded).strip())
    return folded.rstrip(" .;:,!?。；：，！？")
