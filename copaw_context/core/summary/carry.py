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
    word_pattern,
)
from copaw_context.core.summary.markdown import BULLET_PREFIX_RE, is_placeholder, item_key
from copaw_context.core.summary.merge import union_items
from copaw_context.core.summary.message import split_summary_message
from copaw_context.core.summary.model import Heading, HeadingKey, Layout, Summary
from copaw_context.core.summary.statements import has_reason
from copaw_context.core.summary.verbatim import unique

__all__ = [
    "EXACT_RE",
    "PLANNED_RE",
    "READ_FILE_RE",
    "REQUEST_RE",
    "carried_label",
    "carry_facts",
    "carry_verbatim",
    "essentials",
    "flatten_carried",
    "keep_decided",
    "keep_previous",
    "preserve_previous",
]

# A user's request under Goal, as the extractive summary and the task carry write it.
REQUEST_RE = re.compile(rf"(?:{word_pattern('request')})(?: \([^()\n]*\))?(?:: |：)")
# A step of the last stated plan, as the extractive summary and the carry write it.
PLANNED_RE = re.compile(rf"(?:{word_pattern('planned')})(?:: |：)")
# A file only read: exact, but left out before the files changed (see fit.trim).
READ_FILE_RE = re.compile(rf"(?:{word_pattern('read_file')})(?:: |：)")
# Exact errors and paths: what the agent cannot find again without knowing it.
EXACT_RE = re.compile(
    rf"(?:{'|'.join(word_pattern(k) for k in ('file', 'read_file', 'error', 'last_error'))})"
    r"(?: \([^()\n]*\))?(?:: |：)"
    r"|[^\s:()]+(?:\([^\n]*?\))?: error — "  # a failed step with its error line
)

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
    """One labelled item per kind of fact (constraints, errors, files changed, files only
    read) absent from ``text``, and a note of the error lines left out."""
    present = text
    lines = _line_keys(text)
    out: list[str] = []
    read = set(facts.read_paths)
    changed = [p for p in facts.file_paths if p not in read]
    every = (facts.constraints, facts.error_lines, changed, facts.read_paths)
    labels = CARRY_LABELS[language]
    for label, items in zip((*labels[:3], labels[4]), every, strict=True):
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


def _with_task(goal: list[str], task: str | None, text: str, language: Language) -> list[str]:
    """``goal`` with the user's task in their own words when the summary lacks them: first
    while the Goal holds no user request yet (the trim keeps the first Goal item), else last."""
    if task is None or task in text:
        return goal
    label = WORDS[language]["request"]
    item = f"- {label}{WORDS[language]['colon']}{task}"
    asked = any(REQUEST_RE.match(item_key(i)) for i in goal)
    return [*goal, item] if asked else [item, *goal]


def _join_groups(critical: list[str], items: list[str]) -> list[str]:
    """``critical`` with the carried ``items``, a labelled group's sub-items joining the
    group of that label already there (one "Files:" group, not one per compaction)."""
    out = list(critical)
    for item in items:
        label = carried_label(item)
        at = next(
            (k for k, old in enumerate(out) if label is not None and carried_label(old) == label),
            None,
        )
        if at is None or "\n" not in item:
            out.append(item)
        else:
            out[at] = out[at] + "\n" + item.split("\n", 1)[1]
    return out


def _superseded(item: str, plan: Sequence[str]) -> bool:
    """Whether ``item`` is a step planned before (its label) that the new ``plan`` lacks."""
    key = item_key(item)
    match = PLANNED_RE.match(key)
    return match is not None and key[match.end() :] not in {" ".join(p.split()) for p in plan}


def _promote_changed(summary: Summary, changed: set[str]) -> Summary:
    """``summary`` with the files it lists as only read that are changed now no longer so
    (a ``File read:`` item becomes a ``File:`` item; a sub-item of a carried ``Files read:``
    group leaves it, to be carried as changed); ``summary`` itself when there is none."""
    if not changed:
        return summary
    words = WORDS[summary.language]
    critical: list[str] = []
    for item in summary.critical:
        key = item_key(item)
        read = READ_FILE_RE.match(key)
        if read and key[read.end() :] in changed:
            critical.append(f"- {words['file']}{words['colon']}{key[read.end() :]}")
        elif carried_label(item) == 4:
            head, *subs = item.split("\n")
            kept = [sub for sub in subs if item_key(sub) not in changed]
            critical += ["\n".join([head, *kept])] if kept else []
        else:
            critical.append(item)
    if critical == summary.critical:
        return summary
    return summary.model_copy(update={"critical": union_items(critical)})


def carry_facts(summary: Summary, facts: ExtractedFacts) -> Summary:
    """``summary`` with every constraint, error line and file path it lacks, verbatim, every
    decision the conversation gave a reason for, the user's task in their own words and the
    last plan the assistant stated.

    Constraints, errors and files go under Critical Context (created if missing), grouped by
    label (into the group of that label when there is one), with a note of any error lines
    left out; decisions go under Key Decisions; the task (the first request of the batch)
    under Goal; the plan's steps under Next Steps, replacing the steps planned before. An
    item found anywhere in the rendered summary is not added again; ``summary`` itself is
    returned when nothing is missing. Only adds (but the superseded steps):
    :func:`~.clean.settle_carried` then merges a carried item with the model's shorter
    wording of it.
    """
    read = set(facts.read_paths)
    promoted = _promote_changed(summary, {p for p in facts.file_paths if p not in read})
    text = promoted.text()
    lines = _line_keys(text)
    decisions = [d for d in _reasoned(facts) if not _present(d, lines, text)]
    items = _missing(text, facts, summary.language)
    goal = _with_task(summary.goal, facts.task, text, summary.language)
    words = WORDS[summary.language]
    plan = unique(facts.plan)
    planned = [
        f"1. {words['planned']}{words['colon']}{step}"
        for step in plan
        if not _present(step, lines, text)
    ]
    steps = summary.next_steps
    if plan:  # a plan stated since supersedes the steps planned before
        steps = [i for i in steps if not _superseded(i, plan)]
    unchanged = goal is summary.goal and steps is summary.next_steps and promoted is summary
    if not (decisions or items or planned) and unchanged:
        return summary
    update = {
        "goal": goal,
        "decisions": [*summary.decisions, *(f"- {d}" for d in decisions)],
        "next_steps": [*steps, *planned],
        "critical": _join_groups(promoted.critical, items),
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
            word = words["error" if label == 1 else "read_file" if label == 4 else "file"]
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


def essentials(summary: Summary) -> Summary:
    """What of ``summary`` the agent cannot find again without knowing it: the first Goal
    item and the first user request under Goal (the task), the constraints, and the
    Critical Context's exact errors and paths and carried groups. What a previous summary
    passes on (:func:`keep_previous`) when all of it does not fit."""
    critical = [
        item
        for item in summary.critical
        if EXACT_RE.match(item_key(item)) is not None or carried_label(item) not in (None, 3)
    ]
    goal = summary.goal[:1]
    goal += [i for i in summary.goal if REQUEST_RE.match(item_key(i)) and i not in goal][:1]
    update = {"goal": goal, "critical": critical}
    return summary.model_copy(update=update)


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


def keep_decided(summary: Summary, previous: Summary) -> Summary:
    """``summary`` with the Key Decisions of ``previous`` and the steps of the plan it
    carried (``Planned next:``) that it lacks: a model reply that drops them loses them for
    good otherwise. A later plan replaces the steps (:func:`carry_facts`)."""
    text = " ".join(summary.text().split())
    decisions = [
        item
        for item in previous.decisions
        if not is_placeholder(item) and not _contains(text, item_key(item))
    ]
    planned = [
        item
        for item in previous.next_steps
        if PLANNED_RE.match(item_key(item)) and not _contains(text, item_key(item))
    ]
    if not (decisions or planned):
        return summary
    update: dict[str, object] = {"next_steps": [*summary.next_steps, *planned]}
    if decisions:
        current = [] if _only_placeholders(summary.decisions) else summary.decisions
        update["decisions"] = [*current, *decisions]
        if not current:
            update["layout"] = _restart(summary.layout, "decisions")
    return summary.model_copy(update=update)


def preserve_previous(previous: str, new: str, *, language: Language = "en") -> str:
    """:func:`keep_previous` for texts (``previous`` may be a rendered summary message);
    ``new`` itself when nothing is missing."""
    language = check_language(language)
    summary = Summary.parse(new, language)
    kept = keep_previous(summary, Summary.parse(split_summary_message(previous), language))
    return new if kept is summary else kept.text()
