"""The offline summariser: a six-section summary built from a transcript's facts, merged
into the previous summary and kept within a character budget. Deterministic, no model."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from copaw_context.core.markdown_blocks import fence_closer
from copaw_context.core.summary.carry import PLANNED_RE, REQUEST_RE, carry_facts, flatten_carried
from copaw_context.core.summary.facts import (
    MAX_REQUEST_CHARS,
    ExtractedFacts,
    extract_facts,
    user_texts,
)
from copaw_context.core.summary.fit import trim
from copaw_context.core.summary.junk import drop_junk, item_junk
from copaw_context.core.summary.language import WORDS, Language, check_language, word_pattern
from copaw_context.core.summary.markdown import item_key
from copaw_context.core.summary.merge import merge, union_items
from copaw_context.core.summary.message import split_summary_message
from copaw_context.core.summary.model import Summary
from copaw_context.core.summary.result_facts import first_line
from copaw_context.core.summary.statements import has_reason, is_acknowledgement
from copaw_context.core.summary.verbatim import cut, unique
from copaw_context.core.transcript import TranscriptMessage

__all__ = ["MIN_SUMMARY_CHARS", "extractive", "extractive_summary"]

MIN_SUMMARY_CHARS = 1000


def _labelled(label: str, timestamp: str, text: str, language: Language) -> str:
    when = f" ({timestamp})" if timestamp else ""
    lines = text.split("\n")
    closer = fence_closer(text)
    if closer:
        lines.append(closer)  # a cut inside a code block must not swallow later headings
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


def _pending(
    messages: Sequence[TranscriptMessage],
    requests: Sequence[tuple[str, str]],
    facts: ExtractedFacts,
    language: Language,
) -> tuple[list[str], list[str]]:
    """In Progress and Next Steps of a batch: the latest request not yet answered first,
    then the last plan the assistant stated (or open task items), then, for an answered
    request, a check that it was fully answered."""
    words = WORDS[language]
    in_progress: list[str] = []
    first: list[str] = []
    last: list[str] = []
    if requests:
        timestamp, latest = requests[-1]
        line = cut(first_line(latest), 200)
        if _answered(messages):
            last.append("1." + _labelled(words["confirm"], timestamp, line, language)[1:])
        else:
            in_progress.append("- [ ]" + _labelled(words["latest"], timestamp, line, language)[1:])
            first.append("1." + _labelled(words["continue"], timestamp, line, language)[1:])
    planned = ["1." + _labelled(words["planned"], "", step, language)[1:] for step in facts.plan]
    return in_progress, [*first, *planned, *last]


def _answered(messages: Sequence[TranscriptMessage]) -> bool:
    """Whether the latest request was answered: the batch ends with an answer, or with the
    user's acknowledgement of one ("Noted.", "好的")."""
    real = [m for m in messages if m.parts]
    while real and real[-1].role == "user" and is_acknowledgement(real[-1].text()):
        real.pop()
    return _ends_with_answer(real)


def _batch(
    messages: Sequence[TranscriptMessage],
    user: Sequence[tuple[str, str]],
    facts: ExtractedFacts,
    extra_instruction: str,
    language: Language,
) -> Summary:
    """The summary of one batch: every user request verbatim (each cut), the latest one
    open or to be confirmed, tool outcomes, errors, files, decisions and the /compact note."""
    words = WORDS[language]
    requests = [(ts, cut(text, MAX_REQUEST_CHARS)) for ts, text in user]
    goal = unique([_labelled(words["request"], ts, text, language) for ts, text in requests])
    in_progress, next_steps = _pending(messages, requests, facts, language)
    outcomes = [(o, o.split(": ", 1)[-1].startswith("error")) for o in facts.tool_outcomes]
    done = unique([f"- [x] {_outcome(o)}" for o, failed in outcomes if not failed])
    blocked = [f"- {o}" for o, failed in outcomes if failed]
    if not blocked and facts.error_lines:
        blocked = [f"- {words['last_error']}{words['colon']}{facts.error_lines[-1]}"]
    read = set(facts.read_paths)
    critical = [
        f"- {words['read_file' if p in read else 'file']}{words['colon']}{p}"
        for p in facts.file_paths
    ]
    critical += [f"- {words['error']}{words['colon']}{e}" for e in facts.error_lines]
    # A choice without its reason is context, not a decision (the rule the model's summary
    # is held to, rules.py): it goes under Critical Context.
    reasoned = [d for d in facts.decisions if has_reason(d)]
    critical += [f"- {d}" for d in facts.decisions if not has_reason(d)]
    if extra_instruction.strip():
        note = cut(" ".join(extra_instruction.split()), 800)
        critical.append(f"- {words['note']}{words['colon']}{note}")
    return Summary(
        language=language,
        goal=goal,
        constraints=[f"- {c}" for c in facts.constraints],
        done=done,
        in_progress=in_progress,
        blocked=blocked,
        decisions=[f"- {d}" for d in reasoned],
        next_steps=next_steps,
        critical=critical,
    )


def close_passed(summary: Summary, passed: Sequence[str]) -> Summary:
    """``summary`` without the failures of the calls that have passed since (``passed``:
    ``tool(target)`` labels): their Blocked items and the error line each named."""
    if not passed:
        return summary
    heads = tuple(f"- {label}: error — " for label in passed)
    closed = [item for item in summary.blocked if item.startswith(heads)]
    if not closed:
        return summary
    lines = {item.split(" — ", 1)[1].strip() for item in closed}
    words = WORDS[summary.language]
    gone = {f"- {words['error']}{words['colon']}{line}" for line in lines}
    blocked = [item for item in summary.blocked if item not in closed]
    critical = [item for item in summary.critical if item not in gone]
    return summary.model_copy(update={"blocked": blocked, "critical": critical})


def _outcome(outcome: str) -> str:
    """A successful outcome as a Done item: its detail left out when it is only a read
    file's or a search's first line (a source line, a hit, a count: see :mod:`.junk`)."""
    if item_junk(f"- [x] {outcome}") == "notice" and " — " in outcome:
        return outcome.split(" — ", 1)[0]
    return outcome


_REQUEST_ITEM_RE = re.compile(
    r"(?:[-*+]\s+(?:\[[ xX]\]\s*)?|\d+[.)]\s+)"
    rf"(?P<label>{word_pattern('latest')}|{word_pattern('continue')}|{word_pattern('confirm')})"
    r"(?: \((?P<ts>[^()\n]*)\))?(?::[ \t]|：)(?P<text>.*)",
    re.DOTALL,
)
_CUT_NOTE_RE = re.compile(r" … \[\d+ more characters omitted\]$")


def _flat(text: str) -> str:
    return " ".join(text.split())


def _close_requests(
    previous: Summary, messages: Sequence[TranscriptMessage], has_requests: bool
) -> Summary:
    """``previous`` without the open request items that the new batch supersedes.

    A batch with user requests replaces the previous request-derived In Progress and Next
    Steps items (each stays in the Goal as a plain "User request" item). A batch without
    requests that ends with an answer turns the open request into a check.
    """
    language = previous.language
    words = WORDS[language]
    if not has_requests and not _answered(messages):
        return previous
    goal = previous.goal
    goal_text = _flat("\n".join(goal))
    closed = [m for item in previous.in_progress if (m := _REQUEST_ITEM_RE.fullmatch(item))]
    in_progress = [i for i in previous.in_progress if not _REQUEST_ITEM_RE.fullmatch(i)]
    steps: list[str] = []
    for item in previous.next_steps:
        match = _REQUEST_ITEM_RE.fullmatch(item)
        if match is None:
            steps.append(item)
        elif has_requests:
            closed.append(match)
        elif match["label"] in (WORDS["en"]["continue"], WORDS["zh"]["continue"]):
            confirm = _labelled(words["confirm"], match["ts"] or "", match["text"], language)
            steps.append("1." + confirm[1:])
        else:
            steps.append(item)
    for match in closed:
        text = _CUT_NOTE_RE.sub("", match["text"].strip())
        if text and _flat(text) not in goal_text:
            item = _labelled(words["request"], match["ts"] or "", text, language)
            goal = union_items(goal, [item])
            goal_text += " " + _flat(text)
    update = {"goal": goal, "in_progress": in_progress, "next_steps": steps}
    return previous.model_copy(update=update)


def extractive(
    messages: Sequence[TranscriptMessage],
    *,
    previous: Summary | None = None,
    extra_instruction: str = "",
    language: Language = "en",
    max_chars: int = 12000,
    dropped: Counter[str] | None = None,
) -> Summary:
    """A six-section summary of ``messages`` from their facts, merged into ``previous``.

    Every user request of ``messages`` is listed verbatim (each cut to 2,000 characters);
    the previous summary's open request items are closed when newer requests arrive. Over
    ``max_chars`` the oldest items are left out (with a note pointing at the dialog archive);
    the first Goal item (the original task) and the latest request are always kept, cut
    before the constraints, decisions, exact errors and paths go (see :func:`~.fit.trim`).
    Built without junk lines (:func:`~.junk.drop_junk`: a carried error already under
    Blocked, a read file's snippet ...); ``dropped`` gets the lines left out, by reason.
    """
    language = check_language(language)
    if (
        isinstance(max_chars, bool)
        or not isinstance(max_chars, int)
        or max_chars < MIN_SUMMARY_CHARS
    ):
        raise ValueError(f"max_chars: got {max_chars!r}; use an int >= {MIN_SUMMARY_CHARS}")
    facts = extract_facts(messages)
    user = [(ts, text) for ts, text in user_texts(messages) if not is_acknowledgement(text)]
    before = Summary(language=language) if previous is None else previous
    before = _close_requests(flatten_carried(before), messages, bool(user))
    if facts.plan:  # the last stated plan replaces the one stated before
        steps = [i for i in before.next_steps if not PLANNED_RE.match(item_key(i))]
        before = before.model_copy(update={"next_steps": steps})
    before = close_passed(before, facts.passed)
    new = _batch(messages, user, facts, extra_instruction, language)
    # the batch's requests are under Goal word for word already (cut, they would be found
    # nowhere): no task to carry
    merged, junk = drop_junk(carry_facts(merge(before, new), replace(facts, task=None)))
    if dropped is not None:
        dropped.update(junk)
    goal = merged.goal
    protected = {item_key(item) for item in goal[:1]}
    protected.update(item_key(item) for item in (new.goal or goal)[-1:])
    protected.update(item_key(item) for item in merged.next_steps[-1:])  # what is still open
    # the first user request: the task, also below a Goal a model wrote
    protected.update([item_key(i) for i in goal if REQUEST_RE.match(item_key(i))][:1])
    return trim(merged, protected, max_chars)


def extractive_summary(
    messages: Sequence[TranscriptMessage],
    *,
    previous_summary: str = "",
    extra_instruction: str = "",
    language: Language = "en",
    max_chars: int = 12000,
) -> str:
    """:func:`extractive` for a previous summary's text (a summary or a summary message),
    as text."""
    language = check_language(language)
    previous = Summary.parse(split_summary_message(previous_summary), language)
    summary = extractive(
        messages,
        previous=previous,
        extra_instruction=extra_instruction,
        language=language,
        max_chars=max_chars,
    )
    return summary.text()
