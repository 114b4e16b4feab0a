"""The pieces of the extractive summary: the new batch's sections, closing answered
requests, and trimming to the size limit.

Used by :func:`copaw_context.core.extractive.extractive_summary`.
"""

from __future__ import annotations

import heapq
import re
from collections import deque
from collections.abc import Callable, Sequence

from copaw_context.core._facts import MAX_REQUEST_CHARS, ExtractedFacts, cut, first_line, unique
from copaw_context.core._summary_doc import FENCE_RE
from copaw_context.core._summary_edit import carried_label
from copaw_context.core._summary_merge import SummaryDoc, item_key, render_doc, union_items
from copaw_context.core.prompts import Language
from copaw_context.core.transcript import TranscriptMessage

__all__ = [
    "WORDS",
    "close_previous_requests",
    "flatten_carried",
    "new_doc",
    "trim_to_fit",
]

WORDS: dict[Language, dict[str, str]] = {
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
# Constraints may fill at most this share of max_chars before the oldest are left out.
_CONSTRAINT_SHARE = 3


def labelled(label: str, timestamp: str, text: str, language: Language) -> str:
    when = f" ({timestamp})" if timestamp else ""
    lines = text.split("\n")
    if sum(1 for line in lines if FENCE_RE.match(line)) % 2:
        lines.append("```")  # a cut inside a code block must not swallow later headings
    body = "\n".join([lines[0], *(f"  {line}" if line else "" for line in lines[1:])])
    return f"- {label}{when}{WORDS[language]['colon']}{body}"


def _ends_with_answer(messages: Sequence[TranscriptMessage]) -> bool:
    """Whether the last non-empty message is an assistant's text reply with no tool call."""
    final = next((m for m in reversed(messages) if m.parts), None)
    return (
        final is not None
        and final.role == "assistant"
        and bool(final.text().strip())
        and not any(p.kind == "tool_call" for p in final.parts)
    )


def new_doc(
    messages: Sequence[TranscriptMessage],
    user: Sequence[tuple[str, str]],
    facts: ExtractedFacts,
    extra_instruction: str,
    language: Language,
) -> SummaryDoc:
    """The sections of one batch: every user request verbatim (each cut), the latest one
    open or to be confirmed, tool outcomes, errors, files, decisions and the /compact note."""
    words = WORDS[language]
    requests = [(ts, cut(text, MAX_REQUEST_CHARS)) for ts, text in user]
    goal = unique([labelled(words["request"], ts, text, language) for ts, text in requests])
    in_progress: list[str] = []
    next_steps: list[str] = []
    if requests:
        timestamp, latest = requests[-1]
        line = cut(first_line(latest), 200)
        if _ends_with_answer(messages):
            next_steps.append("1." + labelled(words["confirm"], timestamp, line, language)[1:])
        else:
            in_progress.append("- [ ]" + labelled(words["latest"], timestamp, line, language)[1:])
            next_steps.append("1." + labelled(words["continue"], timestamp, line, language)[1:])
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


def _label_pattern(key: str) -> str:
    return "|".join(re.escape(WORDS[lang][key]) for lang in WORDS)


_REQUEST_ITEM_RE = re.compile(
    r"(?:[-*+]\s+(?:\[[ xX]\]\s*)?|\d+[.)]\s+)"
    rf"(?P<label>{_label_pattern('latest')}|{_label_pattern('continue')}|"
    rf"{_label_pattern('confirm')})"
    r"(?: \((?P<ts>[^()\n]*)\))?(?::[ \t]|：)(?P<text>.*)",
    re.DOTALL,
)
_CUT_NOTE_RE = re.compile(r" … \[\d+ more characters omitted\]$")


def _flat(text: str) -> str:
    return " ".join(text.split())


def close_previous_requests(
    previous: SummaryDoc,
    messages: Sequence[TranscriptMessage],
    has_requests: bool,
    language: Language,
) -> None:
    """Close the open request items of ``previous`` that the new batch supersedes.

    A batch with user requests replaces the previous request-derived In Progress and Next
    Steps items (each stays in the Goal as a plain "User request" item). A batch without
    requests that ends with an answer turns the open request into a check.
    """
    words = WORDS[language]
    if not has_requests and not _ends_with_answer(messages):
        return
    goal_text = _flat("\n".join(previous.sections[0]))
    closed = [m for item in previous.progress[1] if (m := _REQUEST_ITEM_RE.fullmatch(item))]
    kept_in_progress = [i for i in previous.progress[1] if not _REQUEST_ITEM_RE.fullmatch(i)]
    steps: list[str] = []
    for item in previous.sections[4]:
        match = _REQUEST_ITEM_RE.fullmatch(item)
        if match is None:
            steps.append(item)
        elif has_requests:
            closed.append(match)
        elif match["label"] in (WORDS["en"]["continue"], WORDS["zh"]["continue"]):
            confirm = labelled(words["confirm"], match["ts"] or "", match["text"], language)
            steps.append("1." + confirm[1:])
        else:
            steps.append(item)
    previous.progress[1] = kept_in_progress
    previous.sections[4] = steps
    for match in closed:
        text = _CUT_NOTE_RE.sub("", match["text"].strip())
        if text and _flat(text) not in goal_text:
            item = labelled(words["request"], match["ts"] or "", text, language)
            previous.sections[0] = union_items(previous.sections[0], [item])
            goal_text += " " + _flat(text)


def flatten_carried(doc: SummaryDoc, language: Language) -> None:
    """Turn carry_verbatim's labelled blocks into single items that can be trimmed one by
    one: constraints join Constraints, errors and files become Critical Context items."""
    words = WORDS[language]
    kept: list[str] = []
    for item in doc.sections[5]:
        label = carried_label(item)
        rest = item.split("\n")[1:]
        subs = [m.group(1) for line in rest if (m := re.fullmatch(r"\s+[-*+]\s+(\S.*)", line))]
        if label is None or label == 3 or not subs or len(subs) != len(rest):
            kept.append(item)
        elif label == 0:
            doc.sections[1] = union_items(doc.sections[1], [f"- {s}" for s in subs])
        else:
            word = words["error" if label == 1 else "file"]
            kept += [f"- {word}{words['colon']}{s}" for s in subs]
    doc.sections[5] = kept


def _drop_until_fits(
    doc: SummaryDoc,
    lists: Callable[[], list[list[str]]],
    droppable: Callable[[str], bool],
    language: Language,
    max_chars: int,
) -> None:
    """Drop the oldest droppable item of the longest of ``lists`` until the summary fits.

    Linear in the number of items (a heap of list sizes, a queue of droppable items per
    list): a megabyte of short lines is trimmed in milliseconds.
    """
    size = len(render_doc(doc, language))
    while size > max_chars:
        groups = lists()
        totals = [sum(len(i) + 1 for i in items) for items in groups]
        queues = [deque(k for k, item in enumerate(items) if droppable(item)) for items in groups]
        heap = [(-totals[g], g) for g in range(len(groups)) if queues[g]]
        heapq.heapify(heap)
        dropped: list[set[int]] = [set() for _ in groups]
        while size > max_chars and heap:
            negative, g = heapq.heappop(heap)
            if -negative != totals[g] or not queues[g]:
                continue  # a stale entry: the list shrank since it was pushed
            victim = queues[g].popleft()
            dropped[g].add(victim)
            cost = len(groups[g][victim]) + 1
            totals[g] -= cost
            size -= cost  # an estimate; re-rendered once it says the summary fits
            if queues[g]:
                heapq.heappush(heap, (-totals[g], g))
        for items, gone in zip(groups, dropped, strict=True):
            if gone:
                items[:] = [item for k, item in enumerate(items) if k not in gone]
        if not heap and size > max_chars:
            return  # nothing left to drop
        size = len(render_doc(doc, language))
        if not any(dropped):
            return


# Items copied mechanically from the messages (requests, files, errors, tool outcomes): the
# dialog archive holds them word for word, unlike what a model or the user wrote.
_COPIED_RE = re.compile(
    rf"(?:{'|'.join(_label_pattern(k) for k in ('request', 'file', 'error', 'last_error'))})"
    r"(?: \([^()\n]*\))?(?:: |：)"
    r"|[^\s:()]+(?:\([^\n]*?\))?: (?:ok|error) — "
)


def trim_to_fit(doc: SummaryDoc, protected: set[str], language: Language, max_chars: int) -> None:
    """Leave out old items until the summary fits ``max_chars``; only ``protected`` items
    (the original task and the latest request) are never left out.

    Constraints keep the newest within a third of ``max_chars``. Then, longest list first
    and oldest item first, go the items copied from the messages (the archive has them),
    then any other item, then the remaining constraints.
    """
    if len(render_doc(doc, language)) <= max_chars:
        return
    note = "- " + WORDS[language]["trimmed"]
    doc.sections[5] = union_items(doc.sections[5], [note])
    keep = protected | {item_key(note)}

    def droppable(item: str) -> bool:
        return item_key(item) not in keep

    constraints = doc.sections[1]
    excess = sum(len(i) + 1 for i in constraints) - max_chars // _CONSTRAINT_SHARE
    kept: list[str] = []
    for item in constraints:  # the oldest droppable ones go first
        if excess > 0 and droppable(item):
            excess -= len(item) + 1
        else:
            kept.append(item)
    constraints[:] = kept

    def others() -> list[list[str]]:
        lists = [doc.preamble, doc.sections[0], doc.sections[2], *doc.sections[3:], *doc.progress]
        return lists + [items for _, items in (*doc.progress_extra, *doc.extra)]

    def copied(item: str) -> bool:
        return droppable(item) and _COPIED_RE.match(item_key(item)) is not None

    _drop_until_fits(doc, others, copied, language, max_chars)
    _drop_until_fits(doc, others, droppable, language, max_chars)
    doc.progress_extra = [(title, items) for title, items in doc.progress_extra if items]
    doc.extra = [(title, items) for title, items in doc.extra if items]
    _drop_until_fits(doc, lambda: [constraints], droppable, language, max_chars)
