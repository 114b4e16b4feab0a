"""How long a summary may be: one :class:`SummaryBudget` per compaction, computed once.

The engine gives a cap derived from the window (about 8% of it, see
:func:`summary_budget_chars`). Within it, the target of one compaction is what the previous
summary already holds plus a share of the newly compacted text, and never less than what the
verbatim carry-over needs (constraints, exact error lines, file paths, decisions with their
reasons) or :data:`MIN_BUDGET_CHARS` (:func:`summary_budget`). So a short compaction asks for
a short summary, a long one for a longer summary, and the window still holds whatever the
summary becomes.

:func:`plan_budget` puts every figure in one :class:`SummaryBudget`: the cap, the target, what
each compactor request asks for, the tokens the summary may take in the context (its room) and
the hard limit of a streaming reply. The prompt's size rule, the size-retry note, the reply
check, the call's deadline and the final fit all read it; none computes a size of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from copaw_context.core.summary.facts import ExtractedFacts
from copaw_context.core.summary.statements import has_reason
from copaw_context.core.summary.verbatim import unique

__all__ = [
    "COMPACTED_SHARE",
    "MIN_BUDGET_CHARS",
    "MIN_ROOM_CHARS",
    "SKELETON_CHARS",
    "SummaryBudget",
    "carried_chars",
    "plan_budget",
    "summary_budget",
    "summary_budget_chars",
]

COMPACTED_SHARE = 0.4  # characters of summary per character of newly compacted text
MIN_BUDGET_CHARS = 1000  # what the extractive summary needs for its protected items
SKELETON_CHARS = 400  # six headings, three subheadings, carry labels and notes
_ITEM_OVERHEAD = 6  # bullet, indentation and newline of a carried item
MIN_ROOM_CHARS = 400  # a summary is never fitted to its room below this
_REPLY_SHARE = 4  # a request asks for at most a quarter of the compactor's window ...
_MIN_REPLY_CHARS = 1000  # ... but never less than the extractive summary needs


@dataclass(frozen=True)
class SummaryBudget:
    """Every size figure of one compaction's summary (see :func:`plan_budget`)."""

    cap: int
    """Characters: the most a summary may hold in this window. A reply over it is rejected
    and the final summary is fitted to it."""
    target: int
    """Characters: what this compaction's summary should hold (it follows what is
    compacted); the extractive summary fills it."""
    ask: int
    """Characters: what each compactor request asks for (the prompt's size rule and the
    size-retry note): the target, within a quarter of the compactor's window."""
    room: int | None = None
    """Tokens of our counter the summary may take in the context once compacted (what the
    kept messages and the fixed parts leave under the threshold); None: no context."""
    floor: int = MIN_ROOM_CHARS
    """Characters: the room never fits a summary below this."""

    @property
    def hard_limit(self) -> int:
        """Characters at which a streaming reply is stopped: it would be rejected anyway."""
        return self.cap + self.cap // 10 + 200

    def limit(self, chars: int, tokens: int) -> int:
        """The characters a summary of ``chars`` characters and ``tokens`` tokens may keep:
        the cap, and within the room at the summary's own characters per token (a summary in
        Chinese takes about a token a character, more than the cap in characters assumes)."""
        if self.room is None or tokens <= self.room:
            return self.cap
        return min(self.cap, max(self.floor, chars * max(0, self.room) // tokens))


def plan_budget(
    cap: int,
    *,
    compacted_chars: int = 0,
    previous_chars: int = 0,
    carried: int = 0,
    adaptive: bool = True,
    reply_window: int | None = None,
    room: int | None = None,
    floor: int = MIN_ROOM_CHARS,
) -> SummaryBudget:
    """The budget of one compaction: the target follows the compacted text (see
    :func:`summary_budget`; the cap itself when not ``adaptive`` or below
    :data:`MIN_BUDGET_CHARS`); a request asks for the target within a quarter of the
    compactor's ``reply_window`` (about 2 characters a token, never below 1000); ``room``
    is the summary's tokens in the context (None: unbounded)."""
    target = cap
    if adaptive and cap >= MIN_BUDGET_CHARS:
        target = summary_budget(
            cap,
            compacted_chars=compacted_chars,
            previous_chars=previous_chars,
            carried=carried,
        )
    ask = target
    if reply_window is not None:
        ask = min(target, max(_MIN_REPLY_CHARS, (reply_window // _REPLY_SHARE) * 2))
    return SummaryBudget(cap=cap, target=target, ask=ask, room=room, floor=floor)


def carried_chars(facts: ExtractedFacts) -> int:
    """Characters the verbatim carry-over may add for ``facts``, at most."""
    items = [*facts.constraints, *facts.error_lines, *facts.file_paths]
    items += [d for d in facts.decisions if has_reason(d)]
    return sum(len(item) + _ITEM_OVERHEAD for item in unique(items))


def summary_budget(
    cap: int, *, compacted_chars: int, previous_chars: int = 0, carried: int = 0
) -> int:
    """The summary budget of one compaction, in characters, never above ``cap``.

    ``previous_chars`` (the summary being merged into) plus ``COMPACTED_SHARE`` of
    ``compacted_chars`` (the rendered transcript), at least ``carried`` (see
    :func:`carried_chars`) plus :data:`SKELETON_CHARS`, at least :data:`MIN_BUDGET_CHARS`;
    then at most ``cap`` (the window must hold), but never below ``MIN_BUDGET_CHARS``.
    """
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < MIN_BUDGET_CHARS:
        raise ValueError(f"cap: got {cap!r}; use an int >= {MIN_BUDGET_CHARS}")
    follows = max(0, previous_chars) + int(COMPACTED_SHARE * max(0, compacted_chars))
    needs = max(0, carried) + SKELETON_CHARS
    return min(cap, max(MIN_BUDGET_CHARS, follows, needs))


def summary_budget_chars(window: int, factor: float = 1.0) -> int:
    """About 8% of the window, in characters (at 3 a token, fewer when our count is known to
    run ``factor`` times short), so the summary never crowds out the context: at most 16000,
    at least 1000 (what the extractive summary needs for its protected items)."""
    return max(1000, min(16000, int(window * 0.08 * 3 / max(1.0, factor))))
