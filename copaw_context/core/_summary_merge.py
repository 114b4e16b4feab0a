"""A summary as lists of items per section, for merging, rendering and trimming.

An item is a bullet with its continuation lines, or a paragraph. Used by
:mod:`copaw_context.core.extractive`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from copaw_context.core._summary_doc import (
    BULLET_PREFIX_RE,
    FENCE_RE,
    find_headings,
    is_placeholder,
    section_index,
    split_sections,
    split_title,
    subsection_index,
)
from copaw_context.core.prompts import PROGRESS_SUBSECTIONS, SECTION_TITLES, Language

__all__ = [
    "SummaryDoc",
    "item_key",
    "merge_docs",
    "parse_doc",
    "render_doc",
    "split_items",
    "union_items",
]

_NONE_MARK: dict[Language, str] = {"en": "- (none)", "zh": "- （无）"}
_CHECKBOX_RE = re.compile(r"^\[[ xX]\]\s*")
_NUMBERED_RE = re.compile(r"^\d+[.)]\s")
_STARTS_ITEM_RE = re.compile(r"^(?:[-*+•]|\d+[.)])\s")


@dataclass
class SummaryDoc:
    """A summary as lists of items (a bullet with its continuation lines, or a paragraph)."""

    preamble: list[str]
    sections: list[list[str]]  # the six known sections; [2] holds Progress text outside ###
    progress: list[list[str]]  # Done, In Progress, Blocked
    progress_extra: list[tuple[str, list[str]]]
    extra: list[tuple[str, list[str]]]  # unknown ## sections, in order


def split_items(lines: Sequence[str]) -> list[str]:
    """The items of a section body: bullets with their continuation lines, or paragraphs."""
    items: list[list[str]] = []
    paragraph = False
    blanks = 0
    in_fence = False
    for line in lines:
        fence = bool(FENCE_RE.match(line))
        if in_fence or (fence and items and not blanks):
            items[-1] += [""] * blanks + [line]
        elif not line.strip():
            blanks += 1
            continue
        elif items and (
            line[0] in " \t" or (paragraph and not blanks and not _STARTS_ITEM_RE.match(line))
        ):
            items[-1] += [""] * blanks + [line]
        else:
            items.append([line])
            paragraph = not _STARTS_ITEM_RE.match(line)
        in_fence = in_fence != fence
        blanks = 0
    return ["\n".join(item).rstrip() for item in items]


def item_key(item: str) -> str:
    """The text that identifies ``item``: no bullet, checkbox or spacing differences."""
    text = _CHECKBOX_RE.sub("", BULLET_PREFIX_RE.sub("", item, count=1))
    return " ".join(text.split())


def parse_doc(text: str) -> SummaryDoc:
    """Split a summary into its sections' items; unknown headings are kept as extras."""
    level, preamble, sections = split_sections(text)
    doc = SummaryDoc(split_items(preamble), [[] for _ in range(6)], [[], [], []], [], [])
    for title, body in sections:
        index = section_index(title)
        if index is None:
            doc.extra.append((title.strip(), split_items(body)))
            continue
        if index != 2:
            doc.sections[index] += split_items(body)
            continue
        subheadings = find_headings(body, level=level + 1)
        start = 0
        for row in [*sorted(subheadings), len(body)]:
            if start == 0:
                doc.sections[2] += split_items(body[:row])
            else:
                sub_title, tail = split_title(subheadings[start - 1])
                chunk = split_items([tail, *body[start:row]] if tail else body[start:row])
                sub = subsection_index(sub_title)
                if sub is None:
                    doc.progress_extra.append((sub_title.strip(), chunk))
                else:
                    doc.progress[sub] += chunk
            start = row + 1
    return doc


def union_items(*lists: Sequence[str]) -> list[str]:
    """The items of ``lists`` in order without duplicates; "(none)" only if nothing else."""
    seen: set[str] = set()
    out: list[str] = []
    for item in (item for items in lists for item in items):
        key = item_key(item)
        if key not in seen:
            seen.add(key)
            out.append(item)
    real = [item for item in out if not is_placeholder(item)]
    return real if real else out[:1]


def _union_named(*groups: Sequence[tuple[str, list[str]]]) -> list[tuple[str, list[str]]]:
    merged: dict[str, list[str]] = {}
    for title, items in (entry for group in groups for entry in group):
        merged[title] = union_items(merged.get(title, []), items)
    return list(merged.items())


def merge_docs(previous: SummaryDoc, new: SummaryDoc) -> SummaryDoc:
    """``previous`` then ``new`` per section; finished items leave In Progress."""
    done = union_items(previous.progress[0], new.progress[0])
    done_keys = {item_key(item) for item in done}
    in_progress = [
        item
        for item in union_items(previous.progress[1], new.progress[1])
        if item_key(item) not in done_keys
    ]
    return SummaryDoc(
        preamble=union_items(previous.preamble, new.preamble),
        sections=[union_items(a, b) for a, b in zip(previous.sections, new.sections, strict=True)],
        progress=[done, in_progress, union_items(previous.progress[2], new.progress[2])],
        progress_extra=_union_named(previous.progress_extra, new.progress_extra),
        extra=_union_named(previous.extra, new.extra),
    )


def _block(items: Sequence[str], language: Language, *, numbered: bool = False) -> list[str]:
    if not items:
        return [_NONE_MARK[language]]
    lines: list[str] = []
    number = 0
    for item in items:
        paragraph = not _STARTS_ITEM_RE.match(item)
        if numbered and _NUMBERED_RE.match(item):
            number += 1
            item = _NUMBERED_RE.sub(f"{number}. ", item, count=1)
        if lines and (paragraph or not _STARTS_ITEM_RE.match(lines[-1].split("\n")[0])):
            lines.append("")
        lines.append(item)
    return lines


def render_doc(doc: SummaryDoc, language: Language) -> str:
    """The six-section Markdown of ``doc``, unknown sections last."""
    titles, subs = SECTION_TITLES[language], PROGRESS_SUBSECTIONS[language]
    out: list[str] = []
    if doc.preamble:
        out += [*_block(doc.preamble, language), ""]
    for index, title in enumerate(titles):
        out.append(f"## {title}")
        if index == 2:
            if doc.sections[2]:
                out += _block(doc.sections[2], language)
            for sub, items in zip(subs, doc.progress, strict=True):
                out += [f"### {sub}", *_block(items, language)]
            for sub_title, items in doc.progress_extra:
                out += [f"### {sub_title}", *_block(items, language)]
        else:
            out += _block(doc.sections[index], language, numbered=index == 4)
        out.append("")
    for title, items in doc.extra:
        out += [f"## {title}", *_block(items, language), ""]
    return "\n".join(out)
