"""The summary as one document: six typed sections, parsed leniently, rendered as Markdown.

A summary parsed from text keeps how its headings were written (:class:`Layout`), so an edit
that only adds items (the verbatim carry-over, restoring previous items) renders every line
of the original again. A summary built here (merged, trimmed, extractive) has no layout and
renders canonically: ``## `` sections in order, "(none)" in the empty ones.

The :class:`Summary` is what crosses boundaries inside the package: text is parsed once where
it comes in (a model's reply, the host's summary) and turned into text once where it goes out
(:meth:`Summary.text`: to the host, the archive, an event). Both are remembered: a summary
that did not change since it was parsed is its text as written, and one rendered again
unchanged is not rendered twice (a size check, then the host, then the event).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from copaw_context.core.markdown_blocks import MarkdownBlocks, parse_blocks, section_bounds
from copaw_context.core.summary.language import (
    NONE_MARK,
    PROGRESS_KEYS,
    PROGRESS_SUBSECTIONS,
    SECTION_KEYS,
    SECTION_TITLES,
    Language,
    ProgressKey,
    SectionKey,
    check_language,
)
from copaw_context.core.summary.markdown import (
    find_headings,
    section_index,
    section_level,
    split_items,
    split_title,
    starts_item,
    subsection_index,
    unwrap_code_fence,
)

__all__ = [
    "ITEM_KEYS",
    "Block",
    "Heading",
    "HeadingKey",
    "ItemsKey",
    "Layout",
    "Summary",
    "items_key",
]

ItemsKey = Literal[
    "preamble",
    "goal",
    "constraints",
    "progress_notes",
    "done",
    "in_progress",
    "blocked",
    "decisions",
    "next_steps",
    "critical",
]
ITEM_KEYS: tuple[ItemsKey, ...] = get_args(ItemsKey)
HeadingKey = SectionKey | ProgressKey

_NUMBERED_RE = re.compile(r"^\d+[.)]\s")


def items_key(key: HeadingKey) -> ItemsKey:
    """The item list a heading introduces: Progress's own text is ``progress_notes``."""
    return "progress_notes" if key == "progress" else key


class Heading(BaseModel):
    """A heading as the source wrote it, and where its items start."""

    model_config = ConfigDict(frozen=True)

    line: str
    start: int = 0  # index of its first item in the section's list
    tail: str = ""  # "build X" of "## Goal: build X": also the first item under it


class Layout(BaseModel):
    """How a parsed summary was written: its heading level and its heading lines."""

    level: Literal[1, 2] = 2
    headings: dict[HeadingKey, list[Heading]] = Field(default_factory=dict)


class Block(BaseModel):
    """A section or Progress subsection whose title is not one of the known ones."""

    title: str
    items: list[str] = Field(default_factory=list)
    heading: str | None = None  # the heading line as written


class Summary(BaseModel):
    """A checkpoint summary. Each section is a list of items: a bullet with its continuation
    lines, or a paragraph, exactly as written. Unknown sections and text before the first
    heading are kept, so nothing a model wrote is dropped."""

    model_config = ConfigDict(extra="forbid")

    language: Language = "en"
    preamble: list[str] = Field(default_factory=list)
    goal: list[str] = Field(default_factory=list)
    constraints: list[str] = Field(default_factory=list)
    progress_notes: list[str] = Field(default_factory=list)  # Progress text outside ###
    done: list[str] = Field(default_factory=list)
    in_progress: list[str] = Field(default_factory=list)
    blocked: list[str] = Field(default_factory=list)
    progress_other: list[Block] = Field(default_factory=list)
    decisions: list[str] = Field(default_factory=list)
    next_steps: list[str] = Field(default_factory=list)
    critical: list[str] = Field(default_factory=list)
    other: list[Block] = Field(default_factory=list)
    layout: Layout | None = None  # None: render canonically
    # (content, text) of the text it was parsed from; (content, language, text) of a render
    _source: tuple[tuple[object, ...], str] | None = PrivateAttr(default=None)
    _rendered: tuple[tuple[object, ...], Language, str] | None = PrivateAttr(default=None)

    @classmethod
    def parse(cls, markdown: str, language: Language = "en") -> Summary:
        """Read a summary leniently: headings in either language and common variants, one
        wrapping code fence, headings inside code fences ignored, ``#`` or ``##`` sections."""
        summary = _parse(markdown, check_language(language))
        summary._source = (summary._content(), markdown)
        return summary

    def render(self, language: Language | None = None) -> str:
        """The Markdown of the summary; ``language`` (default: its own) names new headings.

        Rendered once per content: asked again unchanged, it returns the same text."""
        language = check_language(language or self.language)
        content = self._content()
        memo = self._rendered
        if memo is not None and memo[1] == language and memo[0] == content:
            return memo[2]
        text = _render(self, language)
        self._rendered = (content, language, text)
        return text

    def text(self) -> str:
        """The summary as text for the world outside: the text it was parsed from while
        nothing changed since (a model's reply stays as written), else :meth:`render`."""
        source = self._source
        if source is not None and source[0] == self._content():
            return source[1]
        return self.render()

    def __eq__(self, other: object) -> bool:
        """Equal fields (how it was last written out does not count)."""
        if not isinstance(other, Summary):
            return NotImplemented
        return self.__dict__ == other.__dict__

    def _content(self) -> tuple[object, ...]:
        """Everything rendering reads, as plain tuples: cheap to build, to compare, to copy."""
        layout = None
        if self.layout is not None:
            heads = self.layout.headings.items()
            rows = tuple((k, tuple((h.line, h.start, h.tail) for h in v)) for k, v in heads)
            layout = (self.layout.level, rows)
        return (
            self.language,
            tuple(tuple(self.items(key)) for key in ITEM_KEYS),
            tuple((b.title, tuple(b.items), b.heading) for b in self.progress_other),
            tuple((b.title, tuple(b.items), b.heading) for b in self.other),
            layout,
        )

    def items(self, key: ItemsKey) -> list[str]:
        """The item list named ``key``."""
        found: list[str] = getattr(self, key)
        return found

    def canonical(self) -> Summary:
        """The same items without the source's layout."""
        return self.model_copy(update={"layout": None}, deep=True)

    def written_sections(self) -> frozenset[SectionKey]:
        """The known sections the source had a heading for (all six when built here)."""
        if self.layout is None:
            return frozenset(SECTION_KEYS)
        return frozenset(key for key in SECTION_KEYS if key in self.layout.headings)

    def has_headings(self) -> bool:
        """Whether the summary has any section at all (known or not)."""
        return self.layout is None or bool(self.layout.headings or self.other)

    def section_items(self) -> Iterator[str]:
        """Every item under a heading, known or not (not the preamble)."""
        for key in ITEM_KEYS[1:]:
            yield from self.items(key)
        for block in (*self.progress_other, *self.other):
            yield from block.items


# --------------------------------------------------------------------------- parse


class _Parsed:
    """The fields of a summary being read."""

    def __init__(self) -> None:
        self.items: dict[ItemsKey, list[str]] = {key: [] for key in ITEM_KEYS}
        self.headings: dict[HeadingKey, list[Heading]] = {}
        self.progress_other: list[Block] = []
        self.other: list[Block] = []

    def add(self, key: HeadingKey, line: str, tail: str, items: list[str]) -> None:
        target = self.items[items_key(key)]
        self.headings.setdefault(key, []).append(Heading(line=line, start=len(target), tail=tail))
        target += items


class _Lines:
    """The lines of a summary being read, with its code rows (parsed once)."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.blocks = parse_blocks(lines)

    def items(self, start: int, end: int, tail: str = "") -> list[str]:
        """The items of rows ``start:end``, after the text of a heading's ``tail``."""
        body = self.lines[start:end]
        shift = 1 if tail else 0
        if tail:
            body = [tail, *body]

        def rows(found: frozenset[int]) -> frozenset[int]:
            return frozenset(row - start + shift for row in found if start <= row < end)

        blocks = self.blocks
        body_blocks = MarkdownBlocks((), rows(blocks.code_rows), rows(blocks.code_starts), None)
        return split_items(body, body_blocks)


def _parse(markdown: str, language: Language) -> Summary:
    doc = _Lines(unwrap_code_fence(markdown).split("\n"))
    lines = doc.lines
    level: Literal[1, 2] = 1 if section_level(lines, doc.blocks) == 1 else 2
    titles = find_headings(lines, level=level, blocks=doc.blocks)
    rows = sorted(titles)
    parsed = _Parsed()
    parsed.items["preamble"] = doc.items(0, rows[0] if rows else len(lines))
    for row, end in section_bounds(rows, len(lines)):
        title, tail = split_title(titles[row])
        index = section_index(title)
        if index is None:
            parsed.other.append(
                Block(title=title.strip(), items=doc.items(row + 1, end, tail), heading=lines[row])
            )
        elif index == 2:
            _parse_progress(parsed, doc, row, end, tail, level)
        else:
            parsed.add(SECTION_KEYS[index], lines[row], tail, doc.items(row + 1, end, tail))
    return Summary(
        language=language,
        **parsed.items,
        progress_other=parsed.progress_other,
        other=parsed.other,
        layout=Layout(level=level, headings=parsed.headings),
    )


def _parse_progress(
    parsed: _Parsed, doc: _Lines, row: int, end: int, tail: str, level: int
) -> None:
    titles = {
        at: title
        for at, title in find_headings(doc.lines, level=level + 1, blocks=doc.blocks).items()
        if row < at < end
    }
    rows = sorted(titles)
    parsed.add("progress", doc.lines[row], tail, doc.items(row + 1, rows[0] if rows else end, tail))
    for sub, sub_end in section_bounds(rows, end):
        title, sub_tail = split_title(titles[sub])
        chunk = doc.items(sub + 1, sub_end, sub_tail)
        index = subsection_index(title)
        if index is None:
            parsed.progress_other.append(
                Block(title=title.strip(), items=chunk, heading=doc.lines[sub])
            )
        else:
            parsed.add(PROGRESS_KEYS[index], doc.lines[sub], sub_tail, chunk)


# --------------------------------------------------------------------------- render


def _block(
    items: Sequence[str], language: Language, *, none_mark: bool, numbered: bool = False
) -> list[str]:
    """The lines of ``items``: paragraphs apart by a blank line, bullets one after another."""
    if not items:
        return [NONE_MARK[language]] if none_mark else []
    lines: list[str] = []
    number = 0
    for item in items:
        paragraph = not starts_item(item)
        if numbered and _NUMBERED_RE.match(item):
            number += 1
            item = _NUMBERED_RE.sub(f"{number}. ", item, count=1)
        if lines and (paragraph or not starts_item(lines[-1].split("\n")[0])):
            lines.append("")
        lines.append(item)
    return lines


class _Renderer:
    def __init__(self, summary: Summary, language: Language) -> None:
        self.summary = summary
        self.language = language
        self.canonical = summary.layout is None
        self.level = 2 if summary.layout is None else summary.layout.level
        self.headings = {} if summary.layout is None else summary.layout.headings

    def heading(self, title: str, level: int) -> str:
        return "#" * level + " " + title

    def section(self, key: HeadingKey, title: str, level: int) -> list[str]:
        """A known section or subsection: its heading(s) as written, then its items."""
        items = self.summary.items(items_key(key))
        heads = self.headings.get(key)
        if not heads:
            mark = self.canonical and key != "progress"
            numbered = self.canonical and key == "next_steps"
            body = _block(items, self.language, none_mark=mark, numbered=numbered)
            return [self.heading(title, level), *body]
        out: list[str] = []
        for n, head in enumerate(heads):
            end = heads[n + 1].start if n + 1 < len(heads) else len(items)
            chunk = items[head.start : end]
            line = head.line
            if head.tail:
                first = chunk[0] if chunk else ""
                if first == head.tail or first.startswith(head.tail + "\n"):
                    rest = first[len(head.tail) + 1 :]
                    chunk = [rest, *chunk[1:]] if rest else chunk[1:]
                else:  # the text after the colon is gone: do not write it again
                    line = self.heading(title, level)
            out += [""] if out else []
            out += [line, *_block(chunk, self.language, none_mark=False)]
        return out

    def block(self, block: Block, level: int) -> list[str]:
        line = block.heading
        if line is None or self.canonical:
            line = self.heading(block.title, level)
        return [line, *_block(block.items, self.language, none_mark=self.canonical)]

    def progress(self) -> list[str]:
        summary, level = self.summary, self.level
        subs = [key for key in PROGRESS_KEYS if self.canonical or self.shows(key)]
        if not (self.canonical or self.shows("progress") or subs or summary.progress_other):
            return []
        out = self.section("progress", SECTION_TITLES[self.language][2], level)
        titles = PROGRESS_SUBSECTIONS[self.language]
        for key in subs:
            out += self.section(key, titles[PROGRESS_KEYS.index(key)], level + 1)
        for block in summary.progress_other:
            out += self.block(block, level + 1)
        return out

    def shows(self, key: HeadingKey) -> bool:
        return key in self.headings or bool(self.summary.items(items_key(key)))

    def render(self) -> str:
        summary = self.summary
        out: list[str] = []
        if summary.preamble:
            out += [*_block(summary.preamble, self.language, none_mark=False), ""]
        for key, title in zip(SECTION_KEYS, SECTION_TITLES[self.language], strict=True):
            if key == "progress":
                lines = self.progress()
            elif self.canonical or self.shows(key):
                lines = self.section(key, title, self.level)
            else:
                lines = []
            out += [*lines, ""] if lines else []
        for block in summary.other:
            out += [*self.block(block, self.level), ""]
        return "\n".join(out)


def _render(summary: Summary, language: Language) -> str:
    return _Renderer(summary, language).render()
