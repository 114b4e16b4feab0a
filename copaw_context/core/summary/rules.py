"""What each section of a model's summary may hold, checked against the conversation.

A compactor model writes what it believes; a line survives only if its section's rule
allows it (every line that goes is counted by reason):

- Constraints & Preferences: only what the user wrote in the compacted span or a previous
  summary held as a constraint (it was supported once: that is how a constraint survives a
  chain of compactions); an item with neither support is no constraint: it moves to
  Critical Context (``moved``), never silently lost;
- Key Decisions: a decision with its reason ("because ...", "decision - reason", "因为
  ..."), found in the conversation; one without a reason is not listed as a decision (it
  moves to Critical Context: ``no_reason``), one nobody took goes (``unstated``);
- Done: only what the conversation shows done; a step the conversation only planned
  ("Next I will ...", "- [ ] ...", "Pending: ...") is not done (``not_done``);
- Next Steps: when the model lists none (no item, or only "(none)"), the steps of the
  conversation's last stated plan ("Remaining:", "TODO:", "接下来：") that are not done
  (a placeholder they replace is counted: ``placeholder``).

The verbatim carry-over runs after these rules: a constraint or a reasoned decision of the
conversation that the model lost or reworded is put back in the conversation's words.
Chinese is judged the same way (character pairs stand for words).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence

from copaw_context.core.summary.carry import carried_label
from copaw_context.core.summary.clean import core, drop_items, says_nothing
from copaw_context.core.summary.facts import ExtractedFacts, user_texts
from copaw_context.core.summary.junk import strip_template_prefix
from copaw_context.core.summary.markdown import BULLET_PREFIX_RE
from copaw_context.core.summary.model import Summary
from copaw_context.core.summary.result_facts import result_facts
from copaw_context.core.summary.statements import has_reason, is_plan, unchecked_items
from copaw_context.core.summary.words import CJK_RUN_RE, content_words, text_words
from copaw_context.core.transcript import TranscriptMessage

__all__ = ["RULE_REASONS", "Evidence", "enforce_rules"]

RULE_REASONS = ("unstated", "moved", "no_reason", "not_done", "template_prefix")

_SPLIT_RE = re.compile(r"(?<=[.!?])\s+|(?<=[。！？；])|\n")
# "decision - reason", "decision — reason", "决定：原因" with a reason of two words at least
_SEPARATED_REASON_RE = re.compile(r"\S\s+[-–—]\s+\S+\s+\S+|\S\s*[-–—]{1,2}\s*[\u3400-\u9fff]{4,}")
_SUPPORT = 0.5  # the share of an item's words the conversation must hold
_PLANNED = 0.6  # the share of a Done item's words a plan holds for it to be only planned


def item_words(text: str) -> set[str]:
    """Content words (3+ characters, stemmed and cut to 6 so "commit" and "committing"
    match) and Chinese character pairs of one line ``text``, in :func:`.core`'s form."""
    key = core(text)
    return content_words(set(key.split()), CJK_RUN_RE.findall(key))


def _share(item: str, words: set[str]) -> float | None:
    """The share of ``item``'s content words in ``words`` (None: it has none)."""
    mine = item_words(item)
    if not mine:
        return None
    return len(mine & words) / len(mine)


def _sentences(text: str) -> Iterable[str]:
    return (s.strip() for s in _SPLIT_RE.split(text) if s.strip())


class Evidence:
    """The words of the conversation, by who said them and how."""

    def __init__(
        self, messages: Sequence[TranscriptMessage], previous: Summary | None = None
    ) -> None:
        # The texts of each kind are read as one: a word met in many messages is judged once.
        user = [text for _stamp, text in user_texts(messages)]
        shown: list[str] = []
        planned: list[str] = []
        results: list[tuple[str, ...]] = []  # a result's words: computed once, when it settled
        for message in messages:
            for part in message.parts:
                if part.kind == "tool_result":
                    results.append(result_facts(part.text).words)
                    continue
                if part.kind != "text" or message.role != "assistant":
                    shown.append(part.text)
                    continue
                items = set(unchecked_items(part.text))
                for sentence in _sentences(part.text):
                    bare = BULLET_PREFIX_RE.sub("", sentence, count=1).removeprefix("[ ] ")
                    plan = is_plan(sentence) or bare.strip() in items
                    (planned if plan else shown).append(sentence)
        if previous is not None:
            user += previous.constraints  # supported once: carried, still supported
            shown.append(previous.text())
        self.user = text_words(user)
        self.shown = text_words(shown).union(self.user, *results)
        self.planned = text_words(planned)
        self.said = self.shown | self.planned


def _stated(item: str, words: set[str]) -> bool:
    share = _share(item, words)
    return share is None or share >= _SUPPORT


def _reasoned(item: str) -> bool:
    body = BULLET_PREFIX_RE.sub("", item.strip(), count=1)
    return has_reason(body) or bool(_SEPARATED_REASON_RE.search(body))


def _only_planned(item: str, evidence: Evidence) -> bool:
    planned = _share(item, evidence.planned)
    if planned is None or planned < _PLANNED:
        return False
    shown = _share(item, evidence.shown)
    return shown is None or shown < planned


def _exempt(item: str, facts: set[str]) -> bool:
    """An item no rule judges: a placeholder (:mod:`.junk` has its own rule), a carried
    block, one of the conversation's own facts."""
    return says_nothing(item) or carried_label(item) is not None or core(item) in facts


def enforce_rules(
    summary: Summary,
    messages: Sequence[TranscriptMessage],
    facts: ExtractedFacts,
    *,
    previous: Summary | None = None,
) -> tuple[Summary, Counter[str]]:
    """A copy of ``summary`` whose Constraints, Key Decisions and Done hold only what their
    rule allows (see the module), and how many items went or moved per reason. The items the
    conversation's own facts name (``facts``: its constraints, reasoned decisions) always
    satisfy their rule."""
    doc = summary.model_copy(deep=True)
    counts: Counter[str] = Counter()
    evidence = Evidence(messages, previous)
    told = {core(c) for c in facts.constraints}

    def unstated_constraint(_n: int, item: str) -> bool:
        return not _exempt(item, told) and not _stated(item, evidence.user)

    unsupported = [item for item in doc.constraints if unstated_constraint(0, item)]
    counts["moved"] += drop_items(doc, "constraints", unstated_constraint)
    doc.critical += unsupported  # context the compactor stated, not the user's constraint
    stripped = [strip_template_prefix(item) for item in doc.decisions]
    counts["template_prefix"] += sum(a != b for a, b in zip(stripped, doc.decisions, strict=True))
    doc.decisions[:] = stripped
    reasons = {core(d) for d in facts.decisions}

    def unreasoned(_n: int, item: str) -> bool:
        return not _exempt(item, reasons) and not _reasoned(item)

    def untaken(_n: int, item: str) -> bool:
        return not _exempt(item, reasons) and not _stated(item, evidence.said)

    counts["unstated"] += drop_items(doc, "decisions", untaken)
    moved = [item for item in doc.decisions if unreasoned(0, item)]
    counts["no_reason"] += drop_items(doc, "decisions", unreasoned)
    doc.critical += moved  # a choice without its reason is context, not a decision

    def planned(_n: int, item: str) -> bool:
        return not says_nothing(item) and _only_planned(item, evidence)

    counts["not_done"] += drop_items(doc, "done", planned)
    steps = _open_plan(doc, facts)
    if steps:  # the model listed no next step: the conversation's last plan is the next step
        counts["placeholder"] += drop_items(doc, "next_steps", lambda _n, _item: True)
        doc.next_steps += [f"{n}. {step}" for n, step in enumerate(steps, 1)]
    counts = +counts
    return (doc if counts or steps else summary), counts


def _open_plan(doc: Summary, facts: ExtractedFacts) -> list[str]:
    """The steps of the conversation's last stated plan that are not done, when the model's
    Next Steps hold nothing (no item, or only placeholders); else none."""
    if not facts.plan or not all(says_nothing(item) for item in doc.next_steps):
        return []
    done = {core(item) for item in doc.done}
    return [step for step in facts.plan if core(step) not in done]
