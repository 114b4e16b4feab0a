"""Which planted facts a summary kept, per category."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence

from copaw_context.core.summary import Summary
from scripts.quality.sessions import CATEGORIES, Planted

__all__ = ["Score", "fact_kept", "score_summary", "total"]

Score = dict[str, tuple[int, int]]  # category -> (kept, planted)


def _norm(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().replace("`", "").split())


def _lines(items: Iterable[str]) -> list[str]:
    return [_norm(line) for item in items for line in item.split("\n")]


def fact_kept(fact: Planted, summary: str, language: str = "en") -> bool:
    """Whether ``summary`` keeps ``fact`` (see :class:`Planted`)."""
    if fact.category in ("paths", "errors"):
        return fact.fragments[0] in summary
    doc = Summary.parse(summary, "zh" if language == "zh" else "en")
    if fact.category == "goal":
        lines = _lines(doc.goal)
    elif fact.category == "next_steps":
        lines = _lines(doc.next_steps)
    else:
        lines = _lines(summary.split("\n"))
    wanted = [_norm(fragment) for fragment in fact.fragments]
    return any(all(w in line for w in wanted) for line in lines)


def score_summary(summary: str, planted: Sequence[Planted], language: str = "en") -> Score:
    """(kept, planted) per category."""
    out: Score = {}
    for category in CATEGORIES:
        facts = [fact for fact in planted if fact.category == category]
        kept = sum(1 for fact in facts if fact_kept(fact, summary, language))
        out[category] = (kept, len(facts))
    return out


def total(scores: Iterable[Score]) -> Score:
    """The per-category sums of several scores."""
    out: Score = {category: (0, 0) for category in CATEGORIES}
    for score in scores:
        for category, (kept, planted) in score.items():
            done, all_ = out[category]
            out[category] = (done + kept, all_ + planted)
    return out
