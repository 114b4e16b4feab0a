"""The chain benchmark (``python -m benchmarks --only chain``, issue 21 item 4) on a short
seeded session: a real agent compacts automatically several times, and after each compaction
every fact that left the context is in the summary, with no closed task's error beside a
missing open fact (behaviour only, no timing)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from benchmarks.chain import chain_table, kept, run_session
from benchmarks.chain_sessions import KINDS, Fact, build_sessions
from copaw_context.core.summary import Summary
from copaw_context.testing import ScriptedChatModel, text_step


@pytest.mark.parametrize("language", ["en", "zh"])
async def test_a_short_session_keeps_every_fact_over_its_compactions(
    tmp_path: Path, language: str
) -> None:
    session = build_sessions(seed=5, filler=6, languages=language)[3]  # go
    run = await run_session(session, tmp_path)
    assert len(run.points) >= 5, f"{len(run.points)} compactions"
    exact = ("constraints", "open_errors", "paths", "decisions")  # the 100% targets
    for point in run.points:
        assert not [m for m in point.missing if m.startswith(exact)], point
        assert not point.crowded
    for kind in KINDS:  # the others: 90% at least, over every compaction
        got = sum(p.scores[kind][0] for p in run.points)
        due = sum(p.scores[kind][1] for p in run.points)
        assert due > 0, f"no {kind} fact was ever scored"
        assert got >= 0.9 * due, (kind, got, due)
    table = "\n".join(chain_table([run]))
    assert f"| {session.name} | {len(run.points)} |" in table


def test_a_fact_counts_only_where_it_belongs() -> None:
    summary = "## Goal\n- fix it\n\n## Next Steps\n1. add a benchmark for Get\n"
    doc = Summary.parse(summary)
    plan = Fact("next_steps", ("add a benchmark for Get",), "", 0, section="next_steps")
    goal = Fact("goal", ("add a benchmark",), "", 0, section="goal")
    error = Fact("open_errors", ("    lru_test.go:31: got 3",), "", 0)
    assert kept(plan, summary, doc) and not kept(goal, summary, doc)
    assert not kept(error, summary, doc)
    assert kept(error, summary + "- Error: lru_test.go:31: got 3\n", doc)


def test_the_llm_compactor_is_asked_for_with_a_server_url() -> None:
    from agentscope.model import ChatModelBase

    from benchmarks.__main__ import _compactor

    offline = argparse.Namespace(compactor_url=None)
    assert _compactor(offline) is None  # the extractive compactor
    served = argparse.Namespace(
        compactor_url="http://127.0.0.1:9/v1",  # never called: the model is only built
        compactor_key="none",
        compactor_model="qwen2.5-coder-1.5b",
        compactor_context=8192,
    )
    model = _compactor(served)
    assert isinstance(model, ChatModelBase) and model.context_size == 8192


def test_the_chain_sessions_and_their_compactions_can_be_chosen(tmp_path: Path) -> None:
    from benchmarks.__main__ import _names
    from benchmarks.chain import bench_chain, select_sessions

    sessions = build_sessions(seed=5, filler=6)
    assert _names(None) is None and _names(" , ") is None
    assert _names("go-zh, python-en") == ["go-zh", "python-en"]
    chosen = select_sessions(sessions, ["go-zh", "python-en"])
    assert [s.name for s in chosen] == ["go-zh", "python-en"]
    assert select_sessions(sessions, None) == sessions
    with pytest.raises(ValueError, match="unknown chain session.*no-such.*known: python-en"):
        select_sessions(sessions, ["no-such"])
    lines: list[str] = []
    result = bench_chain(tmp_path, False, lines.append, seed=5, names=["go-en"], max_compactions=2)
    (run,) = result["runs"]
    assert run.name == "go-en" and result["max_compactions"] == 2
    assert 2 <= len(run.points) < 5  # stopped after the turn of its second compaction
    reported = [line for line in lines if " compaction " in line]
    assert len(reported) == len(run.points)
    assert reported[0].startswith("chain: go-en compaction 1 (turn ")
    assert "missing: " in reported[-1]


_FACTLESS = (
    "## Goal\n- Continue the invoice work.\n\n## Constraints & Preferences\n- (none)\n\n"
    "## Progress\n### Done\n- [x] Looked at some files.\n### In Progress\n- [ ] Working on it."
    "\n### Blocked\n- (none)\n\n## Key Decisions\n- (none)\n\n## Next Steps\n1. Keep going.\n\n"
    "## Critical Context\n- (none)\n"
)
# A model that fills the summary's cap (1,440 characters at 6,000 tokens) with its own prose.
_NEAR_CAP = _FACTLESS.replace(
    "- [x] Looked at some files.",
    "\n".join(
        f"- [x] Reviewed part {i} of the invoice renderer and its helpers." for i in range(17)
    ),
)


@pytest.mark.parametrize("reply", [_FACTLESS, _NEAR_CAP], ids=["factless", "near-cap"])
async def test_a_compactor_that_omits_every_fact_still_keeps_them(
    tmp_path: Path, reply: str
) -> None:
    """The LLM path in a small window (6,000 tokens) with a compactor whose every summary
    omits the facts, also one that fills the cap with its own prose: the user's task, the
    constraints, the exact open errors, the paths, the reasoned decisions and the plan are
    carried from one summary to the next over 15 compactions."""
    assert 1200 < len(_NEAR_CAP) <= 1440
    (session,) = [s for s in build_sessions(1) if s.name == "python-en"]
    compactor = ScriptedChatModel([text_step(reply) for _ in range(300)], context_size=16384)
    run = await run_session(session, tmp_path, compactor, 6000, max_compactions=15)
    assert len(run.points) >= 15 and {p.method for p in run.points} == {"llm"}
    carried = ("goal", "constraints", "open_errors", "paths", "decisions", "next_steps")
    for kind in carried:
        assert sum(p.scores[kind][1] for p in run.points) > 0, f"no {kind} fact was due"
    for point in run.points:
        assert not [m for m in point.missing if m.startswith(carried)], point
