"""How long a summary may be: it follows what is compacted, within the window's cap.

The engine gives a cap derived from the window (about 8% of it, see
:func:`summary_budget_chars`). Within it, the budget of one
compaction is what the previous summary already holds plus a share of the newly compacted
text, and never less than what the verbatim carry-over needs (constraints, exact error
lines, file paths, decisions with their reasons) or :data:`MIN_BUDGET_CHARS`. So a short
compaction asks for a short summary, a long one for a longer summary, and the window still
holds whatever the summary becomes.
"""

from __future__ import annotations

from copaw_context.core.summary.facts import ExtractedFacts, unique
from copaw_context.core.summary.statements import has_reason

__all__ = [
    "COMPACTED_SHARE",
    "MIN_BUDGET_CHARS",
    "SKELETON_CHARS",
    "carried_chars",
    "summary_budget",
    "summary_budget_chars",
]

COMPACTED_SHARE = 0.4  # characters of summary per character of newly compacted text
MIN_BUDGET_CHARS = 1000  # what the extractive summary needs for its protected items
SKELETON_CHARS = 400  # six headings, three subheadings, carry labels and notes
_ITEM_OVERHEAD = 6  # bullet, indentation and newline of a carried item


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
