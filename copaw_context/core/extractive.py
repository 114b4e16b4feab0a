"""Deterministic, LLM-free summarisation: fact extraction, verbatim carry-over and merging.

Used when the model summary fails or is disabled, and to make sure even a model summary
keeps the user's constraints, exact error lines and file paths word for word.
"""

from __future__ import annotations

from collections.abc import Sequence

from copaw_context.core._extractive_doc import (
    close_previous_requests,
    flatten_carried,
    new_doc,
    trim_to_fit,
)
from copaw_context.core._facts import ExtractedFacts, cut, extract_facts, unique, user_texts
from copaw_context.core._summary_doc import BULLET_PREFIX_RE, FENCE_RE, is_placeholder
from copaw_context.core._summary_edit import (
    CARRY_LABELS,
    carried_label,
    insert_items,
    is_present,
)
from copaw_context.core._summary_merge import (
    SummaryDoc,
    item_key,
    merge_docs,
    parse_doc,
    render_doc,
)
from copaw_context.core.prompts import (
    Language,
    check_language,
    split_summary_message,
)
from copaw_context.core.transcript import TranscriptMessage

__all__ = [
    "ExtractedFacts",
    "carry_verbatim",
    "extract_facts",
    "extractive_summary",
    "fit_summary",
    "merge_sections",
    "preserve_previous",
]

# --------------------------------------------------------------------------- carry


def _carry_block(groups: Sequence[tuple[str, Sequence[str]]]) -> list[str]:
    lines: list[str] = []
    for label, items in groups:
        if items:
            lines.append(f"- {label}")
            lines += [f"  - {item}" for item in items]
    return lines


def _line_keys(text: str) -> set[str]:
    """Substrings of ``text`` that an item often equals: each line, bare or without its bullet
    or label. A set lookup first spares most ``item in text`` scans of a long summary."""
    keys: set[str] = set()
    for line in text.split("\n"):
        bare = BULLET_PREFIX_RE.sub("", line.strip(), count=1)
        keys.update((line, line.strip(), bare, bare.partition(": ")[2], bare.partition("：")[2]))
    return keys


def carry_verbatim(summary: str, facts: ExtractedFacts, *, language: Language = "en") -> str:
    """Add every constraint, error line and file path missing from ``summary`` verbatim.

    They go under Critical Context (created if missing), grouped by label. Idempotent:
    an item already present anywhere in ``summary`` is not added again.
    """
    labels = CARRY_LABELS[check_language(language)]
    every = (facts.constraints, facts.error_lines, facts.file_paths)
    groups: list[tuple[str, list[str]]] = []
    present = summary
    lines = _line_keys(summary)
    for label, items in zip(labels[:3], every, strict=True):
        missing = [item for item in unique(items) if item not in lines and item not in present]
        present += "".join("\n" + item for item in missing)
        lines.update(missing)
        groups.append((label, missing))
    block = _carry_block(groups)
    if not block:
        return summary
    result = insert_items(summary, 5, ["\n".join(block)], language, replace_none=False)
    # Only multi-line items can be split by the insertion; appending never breaks anything.
    lines = _line_keys(result)
    broken = [
        item
        for items in every
        for item in unique(items)
        if item not in lines and item not in result
    ]
    if broken:
        sep = "" if result.endswith("\n") else "\n"
        result += sep + "\n".join(_carry_block([(labels[3], broken)])) + "\n"
    return result


# --------------------------------------------------------------------------- preserve


def _missing_lines(item: str, text: str) -> list[str] | None:
    """The lines of ``item`` to add so that all of it is in ``text``; None if present.

    A carried block ("- Files:" and its sub-items) only brings its missing sub-items.
    """
    lines = [line for line in item.split("\n") if line.strip()]
    if all(is_present(line, text) for line in lines):
        return None
    if carried_label(item) is None or len(lines) < 2:
        return [item]
    subs = [line for line in lines[1:] if not is_present(line, text)]
    return ["\n".join([lines[0], *subs])]


def preserve_previous(previous: str, new: str, *, language: Language = "en") -> str:
    """Merge the Goal, Constraints & Preferences and Critical Context items of
    ``previous`` that ``new`` dropped back into ``new``.

    For an accepted model summary: a reply that leaves these out cannot erase them. Missing
    items are appended to the same section of ``new`` (created if absent; a section holding
    only "(none)" has it replaced); an item found anywhere in ``new`` (bullets and spacing
    aside) is not added again; other sections are left as they are. Idempotent.
    """
    language = check_language(language)
    old = parse_doc(split_summary_message(previous))
    result = new
    for index in (0, 1, 5):
        text = " ".join(result.split())
        missing: list[str] = []
        for item in old.sections[index]:
            lines = None if is_placeholder(item) else _missing_lines(item, text)
            if lines:
                missing += lines
                text += " " + " ".join(" ".join(lines).split())
        if missing:
            result = insert_items(result, index, missing, language, replace_none=True)
    return result


# --------------------------------------------------------------------------- merge


def merge_sections(previous: str, new: str, *, language: Language = "en") -> str:
    """Merge two summaries section by section: items of ``previous`` first, then new ones.

    Duplicates are dropped, finished items leave In Progress, Next Steps are renumbered and
    unknown sections of either summary are kept at the end.
    """
    language = check_language(language)
    merged = merge_docs(
        parse_doc(split_summary_message(previous)), parse_doc(split_summary_message(new))
    )
    return render_doc(merged, language)


# --------------------------------------------------------------------------- extractive

MIN_SUMMARY_CHARS = 1000


def extractive_summary(
    messages: Sequence[TranscriptMessage],
    *,
    previous_summary: str = "",
    extra_instruction: str = "",
    language: Language = "en",
    max_chars: int = 12000,
) -> str:
    """A six-section summary built from :func:`extract_facts`, merged into ``previous_summary``.

    Every user request of ``messages`` is listed verbatim (each cut to 2,000 characters);
    the previous summary's open request items are closed when newer requests arrive. Over
    ``max_chars`` the oldest items are left out (with a note pointing at the dialog archive);
    only the first Goal item (the original task) and the latest request are always kept, so
    the result exceeds ``max_chars`` only when those two alone do.
    """
    language = check_language(language)
    if (
        isinstance(max_chars, bool)
        or not isinstance(max_chars, int)
        or max_chars < MIN_SUMMARY_CHARS
    ):
        raise ValueError(f"max_chars: got {max_chars!r}; use an int >= {MIN_SUMMARY_CHARS}")
    facts = extract_facts(messages)
    user = user_texts(messages)
    previous = parse_doc(split_summary_message(previous_summary))
    flatten_carried(previous, language)
    close_previous_requests(previous, messages, bool(user), language)
    new = new_doc(messages, user, facts, extra_instruction, language)
    merged = parse_doc(
        carry_verbatim(render_doc(merge_docs(previous, new), language), facts, language=language)
    )
    goal = merged.sections[0]
    protected = {item_key(item) for item in goal[:1]}
    protected.update(item_key(item) for item in (new.sections[0] or goal)[-1:])
    trim_to_fit(merged, protected, language, max_chars)
    return render_doc(merged, language)


# --------------------------------------------------------------------------- size bound


def _cut_item(item: str, limit: int) -> str:
    if len(item) <= limit:
        return item
    text = cut(item, limit)
    if sum(1 for line in text.split("\n") if FENCE_RE.match(line)) % 2:
        text += "\n  ```"  # a cut inside a code block must not swallow later headings
    return text


def _with_items_cut(doc: SummaryDoc, limit: int) -> SummaryDoc:
    def each(items: list[str]) -> list[str]:
        return [_cut_item(item, limit) for item in items]

    return SummaryDoc(
        preamble=each(doc.preamble),
        sections=[each(items) for items in doc.sections],
        progress=[each(items) for items in doc.progress],
        progress_extra=[(title, each(items)) for title, items in doc.progress_extra],
        extra=[(title, each(items)) for title, items in doc.extra],
    )


def fit_summary(summary: str, *, max_chars: int, language: Language = "en") -> str:
    """``summary`` within ``max_chars`` characters, whatever it holds.

    Unchanged when it fits. Otherwise old items are left out as in
    :func:`extractive_summary` (items copied from the messages first; the first and the
    last Goal items are kept), then, if the kept items alone are too long, every item is
    cut to one common length, and as a last resort the text itself is cut at a line end.
    No step is quadratic: a megabyte of short lines is handled in well under a second.
    """
    language = check_language(language)
    if len(summary) <= max_chars:
        return summary
    doc = parse_doc(split_summary_message(summary))
    flatten_carried(doc, language)
    goal = doc.sections[0]
    trim_to_fit(doc, {item_key(item) for item in goal[:1] + goal[-1:]}, language, max_chars)
    text = render_doc(doc, language)
    if len(text) > max_chars:  # the longest item length that fits, by bisection
        low, high = 0, len(text)
        while low < high:
            middle = (low + high + 1) // 2
            if len(render_doc(_with_items_cut(doc, middle), language)) <= max_chars:
                low = middle
            else:
                high = middle - 1
        text = render_doc(_with_items_cut(doc, max(low, 40)), language)
    if len(text) > max_chars:
        text = text[: text.rfind("\n", 0, max_chars) + 1 or max_chars]
    return text
