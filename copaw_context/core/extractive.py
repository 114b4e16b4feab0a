"""Deterministic, LLM-free summarisation: fact extraction, verbatim carry-over and merging.

Used when the model summary fails or is disabled, and to make sure even a model summary
keeps the user's constraints, exact error lines and file paths word for word.
"""

from __future__ import annotations

from collections.abc import Sequence

from copaw_context.core._facts import (
    MAX_REQUEST_CHARS,
    ExtractedFacts,
    cut,
    extract_facts,
    first_line,
    unique,
    user_texts,
)
from copaw_context.core._summary_doc import FENCE_RE
from copaw_context.core._summary_merge import (
    SummaryDoc,
    item_key,
    merge_docs,
    parse_doc,
    render_doc,
    union_items,
)
from copaw_context.core.prompts import (
    SECTION_TITLES,
    Language,
    check_language,
    find_headings,
    section_index,
    split_summary_message,
    unwrap_code_fence,
)
from copaw_context.core.transcript import TranscriptMessage

__all__ = [
    "ExtractedFacts",
    "carry_verbatim",
    "extract_facts",
    "extractive_summary",
    "merge_sections",
]

# --------------------------------------------------------------------------- carry


_CARRY_LABELS: dict[Language, tuple[str, str, str, str]] = {
    "en": ("Constraints (verbatim):", "Errors (verbatim):", "Files:", "Verbatim:"),
    "zh": ("约束（原文）：", "错误（原文）：", "文件：", "原文："),
}


def _carry_block(groups: Sequence[tuple[str, Sequence[str]]]) -> str:
    lines: list[str] = []
    for label, items in groups:
        if items:
            lines.append(f"- {label}")
            lines += [f"  - {item}" for item in items]
    return "\n".join(lines)


def carry_verbatim(summary: str, facts: ExtractedFacts, *, language: Language = "en") -> str:
    """Add every constraint, error line and file path missing from ``summary`` verbatim.

    They go under Critical Context (created if missing), grouped by label. Idempotent:
    an item already present anywhere in ``summary`` is not added again.
    """
    labels = _CARRY_LABELS[check_language(language)]
    every = (facts.constraints, facts.error_lines, facts.file_paths)
    groups: list[tuple[str, list[str]]] = []
    present = summary
    for label, items in zip(labels[:3], every, strict=True):
        missing = [item for item in unique(items) if item not in present]
        present += "".join("\n" + item for item in missing)
        groups.append((label, missing))
    block = _carry_block(groups)
    if not block:
        return summary
    text = unwrap_code_fence(summary)
    lines = text.split("\n")
    headings = find_headings(lines)
    critical = [row for row, title in headings.items() if section_index(title) == 5]
    if critical:
        following = [row for row in headings if row > critical[0]]
        end = following[0] if following else len(lines)
        while end > critical[0] + 1 and not lines[end - 1].strip():
            end -= 1
        tail = lines[end:]
        if tail and tail[0].strip():
            tail = ["", *tail]
        result = "\n".join([*lines[:end], block, *tail])
    else:
        title = SECTION_TITLES[language][5]
        result = (
            f"{text.rstrip()}\n\n## {title}\n{block}\n"
            if text.strip()
            else f"## {title}\n{block}\n"
        )
    # Only multi-line items can be split by the insertion; appending never breaks anything.
    broken = [item for items in every for item in unique(items) if item not in result]
    if broken:
        sep = "" if result.endswith("\n") else "\n"
        result += sep + _carry_block([(labels[3], broken)]) + "\n"
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

_WORDS: dict[Language, dict[str, str]] = {
    "en": {
        "request": "User request",
        "latest": "Open user request",
        "continue": "Continue with the user request",
        "confirm": "Check that this user request was fully answered",
        "file": "File",
        "error": "Error",
        "last_error": "Last error seen",
        "note": "Compaction note from the user",
        "trimmed": "Older items were left out to fit the summary size limit; the full "
        "history is in the dialog archive.",
        "colon": ": ",
    },
    "zh": {
        "request": "用户请求",
        "latest": "未完成的用户请求",
        "continue": "继续处理用户请求",
        "confirm": "确认该用户请求已完整答复",
        "file": "文件",
        "error": "错误",
        "last_error": "最近出现的错误",
        "note": "用户的压缩说明",
        "trimmed": "为满足摘要长度上限，省略了部分较早的条目；完整历史见对话归档。",
        "colon": "：",
    },
}
MIN_SUMMARY_CHARS = 1000


def _labelled(label: str, timestamp: str, text: str, language: Language) -> str:
    when = f" ({timestamp})" if timestamp else ""
    lines = text.split("\n")
    if sum(1 for line in lines if FENCE_RE.match(line)) % 2:
        lines.append("```")  # a cut inside a code block must not swallow later headings
    body = "\n".join([lines[0], *(f"  {line}" if line else "" for line in lines[1:])])
    return f"- {label}{when}{_WORDS[language]['colon']}{body}"


def _latest_answered(messages: Sequence[TranscriptMessage]) -> bool:
    rows = [i for i, m in enumerate(messages) if m.role == "user" and m.text().strip()]
    if not rows:
        return False
    later = [m for m in messages[rows[-1] + 1 :] if m.parts]
    final = later[-1] if later else None
    return (
        final is not None
        and final.role == "assistant"
        and bool(final.text().strip())
        and not any(p.kind == "tool_call" for p in final.parts)
    )


def _new_doc(
    messages: Sequence[TranscriptMessage],
    facts: ExtractedFacts,
    extra_instruction: str,
    language: Language,
) -> SummaryDoc:
    words = _WORDS[language]
    user = [(ts, cut(text, MAX_REQUEST_CHARS)) for ts, text in user_texts(messages)]
    goal: list[str] = []
    in_progress: list[str] = []
    next_steps: list[str] = []
    if user:
        goal = unique([_labelled(words["request"], *user[i], language) for i in (0, -1)])
        timestamp, latest = user[-1]
        line = cut(first_line(latest), 200)
        if _latest_answered(messages):
            next_steps.append("1." + _labelled(words["confirm"], timestamp, line, language)[1:])
        else:
            in_progress.append("- [ ]" + _labelled(words["latest"], timestamp, line, language)[1:])
            next_steps.append("1." + _labelled(words["continue"], timestamp, line, language)[1:])
    outcomes = [(o, o.split(": ", 1)[-1].startswith("error")) for o in facts.tool_outcomes]
    blocked = [f"- {o}" for o, failed in outcomes if failed]
    if not blocked and facts.error_lines:
        blocked = [f"- {words['last_error']}{words['colon']}{facts.error_lines[-1]}"]
    critical = [f"- {words['file']}{words['colon']}{p}" for p in facts.file_paths]
    critical += [f"- {words['error']}{words['colon']}{e}" for e in facts.error_lines]
    if extra_instruction.strip():
        note = cut(" ".join(extra_instruction.split()), 800)
        critical.append(f"- {words['note']}{words['colon']}{note}")
    return SummaryDoc(
        preamble=[],
        sections=[
            goal,
            [f"- {c}" for c in facts.constraints],
            [],
            [f"- {d}" for d in facts.decisions],
            next_steps,
            critical,
        ],
        progress=[[f"- [x] {o}" for o, failed in outcomes if not failed], in_progress, blocked],
        progress_extra=[],
        extra=[],
    )


def _trim(doc: SummaryDoc, protected: set[str], language: Language, max_chars: int) -> None:
    """Drop the oldest unprotected items of the longest lists until the summary fits."""
    note = "- " + _WORDS[language]["trimmed"]
    carried = tuple(f"- {labels[0]}" for labels in _CARRY_LABELS.values())
    if len(render_doc(doc, language)) <= max_chars:
        return
    doc.sections[5] = union_items(doc.sections[5], [note])
    protected = protected | {item_key(note)}

    def droppable(item: str) -> bool:
        return item_key(item) not in protected and not item.startswith(carried)

    size = len(render_doc(doc, language))
    while size > max_chars:
        lists = [doc.preamble, doc.sections[0], doc.sections[2], *doc.sections[3:], *doc.progress]
        lists += [items for _, items in (*doc.progress_extra, *doc.extra)]
        candidates = [items for items in lists if any(droppable(i) for i in items)]
        if not candidates:
            return  # only protected items are left: never drop them
        longest = max(candidates, key=lambda items: sum(len(i) + 1 for i in items))
        victim = next(i for i in longest if droppable(i))
        longest.remove(victim)
        size -= len(victim) + 1  # an estimate; re-rendered once it says the summary fits
        if size <= max_chars:
            size = len(render_doc(doc, language))


def extractive_summary(
    messages: Sequence[TranscriptMessage],
    *,
    previous_summary: str = "",
    extra_instruction: str = "",
    language: Language = "en",
    max_chars: int = 12000,
) -> str:
    """A six-section summary built from :func:`extract_facts`, merged into ``previous_summary``.

    Nothing of the previous summary is lost except, over ``max_chars``, its oldest
    non-essential items; constraints, the latest request and the Goal are never dropped.
    """
    language = check_language(language)
    if (
        isinstance(max_chars, bool)
        or not isinstance(max_chars, int)
        or max_chars < MIN_SUMMARY_CHARS
    ):
        raise ValueError(f"max_chars: got {max_chars!r}; use an int >= {MIN_SUMMARY_CHARS}")
    facts = extract_facts(messages)
    previous = parse_doc(split_summary_message(previous_summary))
    new = _new_doc(messages, facts, extra_instruction, language)
    merged = parse_doc(
        carry_verbatim(render_doc(merge_docs(previous, new), language), facts, language=language)
    )
    # Never dropped: constraints, the previous Goal and the latest request (last Goal item).
    protected = {item_key(item) for item in (*merged.sections[1], *previous.sections[0])}
    protected.update(item_key(item) for item in new.sections[0][-1:])
    _trim(merged, protected, language, max_chars)
    return render_doc(merged, language)
