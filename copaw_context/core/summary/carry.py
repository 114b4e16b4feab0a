"""Copying facts into a summary word for word, and keeping a previous summary's items.

Both only add items, so a summary parsed from a model's reply keeps its own layout.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from copaw_context.core.summary.facts import ExtractedFacts
from copaw_context.core.summary.language import (
    CARRY_LABELS,
    OMITTED_NOTE,
    WORDS,
    Language,
    check_language,
)
from copaw_context.core.summary.markdown import BULLET_PREFIX_RE, is_placeholder, item_key
from copaw_context.core.summary.merge import union_items
from copaw_context.core.summary.message import split_summary_message
from copaw_context.core.summary.model import Heading, HeadingKey, Layout, Summary
from copaw_context.core.summary.statements import has_reason
from copaw_context.core.summary.verbatim import unique

__all__ = [
    "carried_label",
    "carry_facts",
    "carry_verbatim",
    "flatten_carried",
    "keep_previous",
    "preserve_previous",
]

# --------------------------------------------------------------------------- carry


def _line_keys(text: str) -> set[str]:
    """Substrings of ``text`` that an item often equals: each line, bare or without its bullet
    or label. A set lookup first spares most ``item in text`` scans of a long summary."""
    keys: set[str] = set()
    for line in text.split("\n"):
        bare = BULLET_PREFIX_RE.sub("", line.strip(), count=1)
        keys.update((line, line.strip(), bare, bare.partition(": ")[2], bare.partition("：")[2]))
    return keys


def _carry_item(label: str, items: Sequence[str]) -> str:
    return "\n".join([f"- {label}", *(f"  - {item}" for item in items)])


def _present(item: str, lines: set[str], text: str) -> bool:
    """Whether ``item`` is in the summary word for word."""
    return item in lines or item in text


def _missing(text: str, facts: ExtractedFacts, language: Language) -> list[str]:
    """One labelled item per kind of fact (constraints, errors, files) absent from ``text``,
    and a note of the error lines left out."""
    present = text
    lines = _line_keys(text)
    out: list[str] = []
    every = (facts.constraints, facts.error_lines, facts.file_paths)
    for label, items in zip(CARRY_LABELS[language][:3], every, strict=True):
        missing = [item for item in unique(items) if not _present(item, lines, present)]
        present += "".join("\n" + item for item in missing)
        lines.update(missing)
        if missing:
            out.append(_carry_item(label, missing))
    if facts.error_lines_omitted:
        note = OMITTED_NOTE[language].format(n=facts.error_lines_omitted)
        if note not in text:
            out.append(f"- {note}")
    return out


def _reasoned(facts: ExtractedFacts) -> list[str]:
    return [d for d in unique(facts.decisions) if has_reason(d)]


def _keep_whole(summary: Summary, facts: ExtractedFacts) -> Summary:
    """Facts that rendering split (a multi-line fact across an item boundary) are added
    again, each whole, in one "Verbatim:" item."""
    label = CARRY_LABELS[summary.language][3]
    every = unique([*facts.constraints, *facts.error_lines, *facts.file_paths, *_reasoned(facts)])
    critical = summary.critical
    verbatim: list[str] = []
    while True:
        text = summary.text()
        lines = _line_keys(text)
        broken = [item for item in every if not _present(item, lines, text)]
        if not broken:
            return summary
        verbatim += broken  # an item inside the Verbatim item is never split again
        update = {"critical": [*critical, _carry_item(label, verbatim)]}
        summary = summary.model_copy(update=update)


def carry_facts(summary: Summary, facts: ExtractedFacts) -> Summary:
    """``summary`` with every constraint, error line and file path it lacks, verbatim, and
    every decision the conversation gave a reason for.

    Constraints, errors and files go under Critical Context (created if missing), grouped by
    label, with a note of any error lines left out; decisions go under Key Decisions. An item
    found anywhere in the rendered summary is not added again; ``summary`` itself is returned
    when nothing is missing. Only adds: :func:`~.clean.settle_carried` then merges a carried
    item with the model's shorter wording of it.
    """
    text = summary.text()
    lines = _line_keys(text)
    decisions = [d for d in _reasoned(facts) if not _present(d, lines, text)]
    items = _missing(text, facts, summary.language)
    if not (decisions or items):
        return summary
    update = {
        "decisions": [*summary.decisions, *(f"- {d}" for d in decisions)],
        "critical": [*summary.critical, *items],
    }
    return _keep_whole(summary.model_copy(update=update), facts)


def carry_verbatim(summary: str, facts: ExtractedFacts, *, language: Language = "en") -> str:
    """:func:`carry_facts` for a summary's text; the text itself when nothing is missing."""
    language = check_language(language)
    lines = _line_keys(summary)
    decided = all(_present(d, lines, summary) for d in _reasoned(facts))
    if decided and not _missing(summary, facts, language):
        return summary
    return carry_facts(Summary.parse(summary, language), facts).text()


def carried_label(item: str) -> int | None:
    """Which carry label (0..3, either language) starts ``item``, if any."""
    first = BULLET_PREFIX_RE.sub("", item.split("\n", 1)[0], count=1).strip()
    for labels in CARRY_LABELS.values():
        if first in labels:
            return labels.index(first)
    return None


def flatten_carried(summary: Summary) -> Summary:
    """Turn the carry-over's labelled items into single items that can be trimmed one by
    one: constraints join Constraints, errors and files become Critical Context items."""
    words = WORDS[summary.language]
    constraints = summary.constraints
    kept: list[str] = []
    for item in summary.critical:
        label = carried_label(item)
        rest = item.split("\n")[1:]
        subs = [m.group(1) for line in rest if (m := re.fullmatch(r"\s+[-*+]\s+(\S.*)", line))]
        if label is None or label == 3 or not subs or len(subs) != len(rest):
            kept.append(item)
        elif label == 0:
            constraints = union_items(constraints, [f"- {s}" for s in subs])
        else:
            word = words["error" if label == 1 else "file"]
            kept += [f"- {word}{words['colon']}{s}" for s in subs]
    return summary.model_copy(update={"constraints": constraints, "critical": kept})


# --------------------------------------------------------------------------- previous


def _contains(text: str, key: str) -> bool:
    """Whether ``key`` occurs in ``text`` as whole words: "x -" is not in "_x - :"."""
    return re.search(rf"(?<!\S){re.escape(key)}(?!\S)", text) is not None


def _missing_lines(item: str, text: str) -> list[str] | None:
    """The lines of ``item`` to add so that all of it is in ``text`` (whitespace collapsed);
    None if present. A carried block ("- Files:" and its sub-items) only brings its missing
    sub-items."""
    lines = [line for line in item.split("\n") if line.strip()]
    if all(_contains(text, item_key(line)) for line in lines):
        return None
    if carried_label(item) is None or len(lines) < 2:
        return [item]
    subs = [line for line in lines[1:] if not _contains(text, item_key(line))]
    return ["\n".join([lines[0], *subs])]


def _only_placeholders(items: Sequence[str]) -> bool:
    lines = [line for item in items for line in item.split("\n") if line.strip()]
    return bool(lines) and all(is_placeholder(line) for line in lines)


def _restart(layout: Layout | None, key: HeadingKey) -> Layout | None:
    """The layout once the items under ``key`` were replaced: one heading, from item 0."""
    heads = layout.headings.get(key) if layout is not None else None
    if layout is None or not heads:
        return layout
    first = Heading(line=heads[0].line, tail=heads[0].tail)
    return layout.model_copy(update={"headings": {**layout.headings, key: [first]}})


_KEPT: tuple[Literal["goal", "constraints", "critical"], ...] = ("goal", "constraints", "critical")


def keep_previous(summary: Summary, previous: Summary) -> Summary:
    """``summary`` with the Goal, Constraints & Preferences and Critical Context items of
    ``previous`` that it lacks (found nowhere in it, bullets and spacing aside).

    Missing items are appended to their section (created if absent; a section holding only
    "(none)" has it replaced); other sections are left alone. ``summary`` itself is
    returned when nothing is missing.
    """
    text = " ".join(summary.text().split())
    update: dict[str, object] = {}
    layout = summary.layout
    for key in _KEPT:
        current = summary.items(key)
        missing: list[str] = []
        for item in previous.items(key):
            lines = None if is_placeholder(item) else _missing_lines(item, text)
            if lines:
                missing += lines
                text += " " + " ".join(" ".join(lines).split())
        if missing and _only_placeholders(current):
            update[key] = missing
            layout = _restart(layout, key)
        elif missing:
            update[key] = [*current, *missing]
    if not update:
        return summary
    return summary.model_copy(update={**update, "layout": layout})


def preserve_previous(previous: str, new: str, *, language: Language = "en") -> str:
    """:func:`keep_previous` for texts (``previous`` may be a rendered summary message);
    ``new`` itself when nothing is missing."""
    language = check_language(language)
    summary = Summary.parse(new, language)
    kept = keep_previous(summary, Summary.parse(split_summary_message(previous), language))
    return new if kept is summary else kept.text()
