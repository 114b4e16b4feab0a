"""One SummaryBudget per compaction (issue 18 item 4): every size figure in one place, read by
the prompt, the size-retry note, the reply check, the deadline and one computed fit."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from copaw_context.core.summary import Summary, SummaryCompactor
from copaw_context.core.summary.budget import (
    MIN_BUDGET_CHARS,
    MIN_ROOM_CHARS,
    SummaryBudget,
    plan_budget,
    summary_budget,
)
from copaw_context.core.summary.fit import fit_to_budget
from copaw_context.core.summary.prompts import SIZE_RETRY, SIZE_RULE
from copaw_context.core.tokens import make_token_counter
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart
from copaw_context.testing import ScriptedTextModel
from tests.summaries import six_section_summary

llm = sys.modules["copaw_context.core.summary.llm"]
fitting = sys.modules["copaw_context.core.summary.fit"]


def test_plan_budget_holds_every_figure() -> None:
    budget = plan_budget(6000, compacted_chars=20_000, previous_chars=500, carried=300)
    target = summary_budget(6000, compacted_chars=20_000, previous_chars=500, carried=300)
    assert (budget.cap, budget.target, budget.ask, budget.room) == (6000, target, target, None)
    assert budget.hard_limit == 6000 + 600 + 200
    small = plan_budget(6000, compacted_chars=20_000, reply_window=4000)
    assert small.ask == 2000 < small.target  # a quarter of a 4000-token window, 2 a token
    assert plan_budget(6000, compacted_chars=10**6, reply_window=100).ask == 1000  # the floor
    assert plan_budget(6000, compacted_chars=10, adaptive=False).target == 6000
    assert plan_budget(800, compacted_chars=10).target == 800  # below the minimum: the cap
    assert plan_budget(6000).target == MIN_BUDGET_CHARS


def test_the_limit_is_the_cap_or_the_room_at_the_summarys_own_density() -> None:
    budget = SummaryBudget(cap=5000, target=3000, ask=3000, room=1000)
    assert budget.limit(4000, 900) == 5000  # within the room: the cap
    assert budget.limit(4000, 2000) == 2000  # 2 characters a token, 1000 tokens
    assert budget.limit(6000, 2000) == 3000
    assert budget.limit(20_000, 2000) == 5000  # never above the cap
    assert budget.limit(1000, 100_000) == MIN_ROOM_CHARS  # never below the floor
    assert SummaryBudget(cap=5000, target=3000, ask=3000).limit(10**6, 10**6) == 5000


@pytest.mark.parametrize("language", ["en", "zh"])
def test_one_fit_brings_a_summary_within_its_room(language: str) -> None:
    counter = make_token_counter("o200k_base")
    item = "数据库迁移失败，回滚到上一版本并记录错误" if language == "zh" else "updated the parser"
    text = six_section_summary(3).replace(
        "### In Progress", "\n".join(f"- [x] {item} {n}" for n in range(300)) + "\n### In Progress"
    )
    summary = Summary.parse(text)
    room = counter.count(text) // 3
    budget = SummaryBudget(cap=len(text), target=len(text), ask=len(text), room=room)
    fitted = fit_to_budget(summary, budget, counter.count)
    assert counter.count(fitted.text()) <= room
    assert len(fitted.text()) >= 0.8 * budget.limit(len(text), counter.count(text))


async def test_a_compaction_computes_its_budget_once_and_every_size_reads_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    budgets: list[SummaryBudget] = []
    plan = llm.plan_budget

    def counted(*args: object, **kwargs: object) -> SummaryBudget:
        budgets.append(plan(*args, **kwargs))
        return budgets[-1]

    fits: list[int] = []
    fit = fitting.fit

    def counted_fit(summary: Summary, max_chars: int) -> Summary:
        fits.append(max_chars)
        return fit(summary, max_chars)

    monkeypatch.setattr(llm, "plan_budget", counted)
    monkeypatch.setattr(fitting, "fit", counted_fit)
    reply = six_section_summary(3)
    model = ScriptedTextModel(["x" * 5000, reply], context_size=8000)
    compactor = SummaryCompactor(
        mode="llm", counter=make_token_counter("estimate"), max_summary_chars=3000
    )
    compactor.retry_delay = 0.0
    words = "Fix the parser, never touch vendor/. " * 200
    messages = [TranscriptMessage("user", "user", (TranscriptPart("text", words),))]
    result = await compactor.summarise(messages, model=model, room_tokens=5000)
    assert result.method == "llm"
    (budget,) = budgets
    assert result.budget is budget and result.budget_chars == budget.target
    assert budget.room == 5000 and budget.ask == min(budget.target, 4000)
    first, retry = model.requests
    rule = SIZE_RULE["en"].format(limit=budget.ask)
    assert rule in first and rule in retry
    assert SIZE_RETRY["en"].format(got=5000, limit=budget.ask) in retry
    assert fits == [budget.cap]  # one fit, to the cap (the reply is within its room)


_DENSE = "数据库迁移失败 0x7f3a9c 回滚"
_SPARSE = "updated the parser and the tests"


@settings(max_examples=80)
@given(
    kinds=st.lists(st.booleans(), min_size=20, max_size=120),
    share=st.floats(min_value=0.05, max_value=0.95),
)
def test_a_fit_never_leaves_a_summary_over_its_room(kinds: list[bool], share: float) -> None:
    """Items of different densities: what the cut keeps may take more tokens a character
    than the whole did, so one proportional cut can end over the room."""
    counter = make_token_counter("o200k_base")
    items = [f"- [x] {_DENSE if dense else _SPARSE} {n}" for n, dense in enumerate(kinds)]
    text = six_section_summary(3).replace("### In Progress", "\n".join(items) + "\n### In Progress")
    tokens = counter.count(text)
    room = max(1, int(tokens * share))
    budget = SummaryBudget(cap=len(text), target=len(text), ask=len(text), room=room)
    fitted = fit_to_budget(Summary.parse(text), budget, counter.count).text()
    assert counter.count(fitted) <= room or len(fitted) <= MIN_ROOM_CHARS
