"""The LLM compactor under failure: retries with backoff, cancellations, oversized replies.

Every test drives real AgentScope agents with ScriptedChatModel; the backoff is made tiny.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from agentscope.message import UserMsg
from agentscope.types import ReplyFinishedReason

from copaw_context import ContextEvent, MemoryCompactionHook
from copaw_context.agentscope2.summariser import AgentScopeSummariser
from copaw_context.core.summary import (
    Summary,
    SummaryCompactor,
    render_summary_message,
    split_summary_message,
    validate_summary,
)
from copaw_context.core.summary.budget import summary_budget_chars as _summary_budget_chars
from copaw_context.core.tokens import make_token_counter
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart
from copaw_context.testing import ModelCall, ScriptedChatModel, Step, text_step
from tests.agent_history import block_keys, config, seeded_history
from tests.helpers import make_agent, six_section_summary
from tests.summaries import PREVIOUS_SUMMARY

WINDOW = 4000


def stored_summary(agent: Any) -> str:
    """The bare summary inside the agent's summary message."""
    return split_summary_message(str(agent.state.summary))


async def _agent(
    tmp_path: Path, compactor: ScriptedChatModel, main_steps: list[Step] | None = None, **light: Any
) -> tuple[Any, MemoryCompactionHook, list[ContextEvent]]:
    """A 4,000-token agent whose next reply compacts 8 seeded turns with ``compactor``."""
    events: list[ContextEvent] = []
    hook = MemoryCompactionHook(
        config(WINDOW, compactor="llm", **light),
        tmp_path,
        compactor_model=compactor,
        on_event=events.append,
    )
    hook.compactor_retry_delay = 0.001  # keep the backoff short in tests
    model = ScriptedChatModel(main_steps or [text_step("still working")], context_size=WINDOW)
    agent = await make_agent(hook, model)
    agent.state.context = seeded_history(8)
    agent.state.summary = render_summary_message(
        PREVIOUS_SUMMARY, [("dialog/2026-11-28.jsonl", 12)]
    )
    return agent, hook, events


def _compaction(events: list[ContextEvent]) -> ContextEvent:
    (event,) = [e for e in events if e.kind == "compaction"]
    return event


# ----------------------------------------------------------------- item 5: retries


async def test_provider_errors_are_retried_and_the_llm_summary_is_used(tmp_path: Path) -> None:
    compactor = ScriptedChatModel(
        [RuntimeError("provider 500"), ConnectionError("reset"), text_step(PREVIOUS_SUMMARY)]
    )
    agent, _, events = await _agent(tmp_path, compactor, compactor_retries=2)
    reply = await agent.reply(UserMsg("user", "What next?"))
    assert reply.get_text_content() == "still working"
    assert len(compactor.calls) == 3
    event = _compaction(events)
    assert event.method == "llm" and event.fallback_reason is None
    compactor.assert_complete()


async def test_a_provider_that_always_fails_gets_retries_plus_one_calls(tmp_path: Path) -> None:
    compactor = ScriptedChatModel([RuntimeError(f"provider 500 #{i}") for i in range(5)])
    agent, _, events = await _agent(tmp_path, compactor, compactor_retries=2)
    reply = await agent.reply(UserMsg("user", "What next?"))
    assert reply.get_text_content() == "still working"
    assert len(compactor.calls) == 3
    event = _compaction(events)
    assert event.method == "extractive"
    assert "RuntimeError: provider 500 #2" in (event.fallback_reason or "")
    assert "Ship the parser fix for ticket PARSE-17" in str(agent.state.summary)


async def test_no_retry_when_retries_is_zero(tmp_path: Path) -> None:
    compactor = ScriptedChatModel([RuntimeError("provider 500"), text_step(PREVIOUS_SUMMARY)])
    agent, _, events = await _agent(tmp_path, compactor, compactor_retries=0)
    await agent.reply(UserMsg("user", "What next?"))
    assert len(compactor.calls) == 1
    assert _compaction(events).method == "extractive"


def test_backoff_doubles_from_the_base_delay_and_is_capped() -> None:
    compactor = SummaryCompactor(
        mode="llm", counter=make_token_counter("estimate"), retries=3, retry_delay=0.5
    )
    assert [compactor.backoff_seconds(n) for n in range(6)] == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]


# ----------------------------------------------------------------- item 16: cancellation


async def test_a_cancelled_error_inside_the_compactor_model_falls_back(tmp_path: Path) -> None:
    """E.g. an HTTP client raising CancelledError internally: not the user's cancellation."""
    compactor = ScriptedChatModel([asyncio.CancelledError()])
    agent, _, events = await _agent(tmp_path, compactor, compactor_retries=0)
    reply = await agent.reply(UserMsg("user", "What next?"))
    assert reply.get_text_content() == "still working"
    event = _compaction(events)
    assert event.method == "extractive" and "cancel" in (event.fallback_reason or "")
    assert "Ship the parser fix for ticket PARSE-17" in str(agent.state.summary)


async def test_a_cancelled_compactor_call_is_retried(tmp_path: Path) -> None:
    compactor = ScriptedChatModel([asyncio.CancelledError(), text_step(PREVIOUS_SUMMARY)])
    agent, _, events = await _agent(tmp_path, compactor, compactor_retries=1)
    reply = await agent.reply(UserMsg("user", "What next?"))
    assert reply.get_text_content() == "still working"
    assert len(compactor.calls) == 2
    assert _compaction(events).method == "llm"


@pytest.mark.parametrize("raise_cancelled", [False, True])
async def test_cancelling_the_users_turn_during_compaction_applies_nothing(
    tmp_path: Path, raise_cancelled: bool
) -> None:
    started = asyncio.Event()
    never = asyncio.Event()

    async def hang(call: ModelCall) -> list[Any]:
        started.set()
        await never.wait()
        return text_step(PREVIOUS_SUMMARY)

    compactor = ScriptedChatModel([hang, text_step(PREVIOUS_SUMMARY)])
    agent, _, events = await _agent(tmp_path, compactor, compactor_retries=1)
    agent.react_config.interruption_raise_cancelled_error = raise_cancelled
    history = block_keys(agent.state.context)
    summary = agent.state.summary
    task = asyncio.create_task(agent.reply(UserMsg("user", "What next?")))
    await started.wait()
    task.cancel()
    if raise_cancelled:
        with pytest.raises(asyncio.CancelledError):
            await task
        assert task.cancelled()
    else:  # AgentScope's default: the agent ends the turn as interrupted
        reply = await task
        assert reply.finished_reason == ReplyFinishedReason.INTERRUPTED
    assert len(compactor.calls) == 1, "a cancelled turn must not retry the compactor"
    assert block_keys(agent.state.context)[: len(history)] == history, "nothing removed"
    assert agent.state.summary == summary
    assert not [e for e in events if e.kind == "compaction"]
    assert not list(tmp_path.glob("dialog/*.jsonl")), "nothing archived"


# ----------------------------------------------------------------- item 11: size budget

BUDGET = _summary_budget_chars(WINDOW)  # 1,000 characters for a 4,000-token window


@pytest.mark.parametrize("done_lines", [1_700, 17_000], ids=["100KB", "1MB"])
async def test_an_oversized_compactor_reply_never_reaches_the_window(
    tmp_path: Path, done_lines: int
) -> None:
    big = six_section_summary(done_lines)
    compactor = ScriptedChatModel([text_step(big) for _ in range(6)])
    agent, hook, events = await _agent(
        tmp_path, compactor, [text_step("still working"), text_step("done")]
    )
    sent: list[int] = []
    for request, answer in (("What next?", "still working"), ("And then?", "done")):
        reply = await agent.reply(UserMsg("user", request))
        assert reply.get_text_content() == answer
        # what the agent's model received
        sent.append((await hook.agent_stats(agent))["last_prompt_tokens"])
    assert max(sent) <= WINDOW, sent
    assert len(compactor.calls) == 2  # over the budget twice (retries=1), then the fallback
    event = [e for e in events if e.kind == "compaction"][0]
    assert event.method == "extractive" and "too long" in (event.fallback_reason or "")
    assert len(stored_summary(agent)) <= BUDGET
    assert "Finished step 00100" not in str(agent.state.summary)
    assert "Ship the parser fix for ticket PARSE-17" in stored_summary(agent)


async def test_a_reply_over_the_budget_is_retried_with_the_size_stated(tmp_path: Path) -> None:
    big = six_section_summary(1_700)
    compactor = ScriptedChatModel([text_step(big), text_step(PREVIOUS_SUMMARY)])
    agent, _, events = await _agent(tmp_path, compactor)  # compactor_retries: 1 (default)
    reply = await agent.reply(UserMsg("user", "What next?"))
    assert reply.get_text_content() == "still working"
    assert len(compactor.calls) == 2
    event = _compaction(events)
    assert event.method == "llm" and event.fallback_reason is None
    first, second = (call.messages[-1].get_text_content() or "" for call in compactor.calls)
    assert f"at most {BUDGET} characters" in first
    assert (
        f"Your previous answer was {len(big)} characters; the summary must be at most "
        f"{BUDGET} characters." in second
    )
    summary = stored_summary(agent)
    assert "Keep the public API unchanged" in summary  # the second answer
    assert "Finished step 00100" not in summary and len(summary) <= BUDGET
    compactor.assert_complete()


async def test_the_merged_llm_summary_respects_the_budget() -> None:
    """A reply within the budget, plus the carried paths and errors, is bounded again."""
    reply = six_section_summary(8)  # ~870 characters
    assert len(reply) <= BUDGET
    messages = [TranscriptMessage("user", "user", (TranscriptPart("text", "Fix the build."),))]
    for i in range(60):
        path = f"/repo/src/package_{i:02d}/very_long_module_name_{i:02d}.py"
        messages.append(
            TranscriptMessage(
                "assistant",
                "assistant",
                (
                    TranscriptPart("tool_call", json.dumps({"file_path": path}), "read", f"c{i}"),
                    TranscriptPart("tool_result", f"{path}:3: error: bad {i}", "read", f"c{i}"),
                ),
            )
        )
    compactor_model = ScriptedChatModel([text_step(reply)])
    compactor = SummaryCompactor(
        mode="llm", counter=make_token_counter("estimate"), max_summary_chars=BUDGET
    )
    result = await compactor.summarise(
        messages,
        previous=Summary.parse(PREVIOUS_SUMMARY),
        model=AgentScopeSummariser(compactor_model),
    )
    assert result.method == "llm"
    assert len(result.text) <= BUDGET
    assert validate_summary(result.text) is None
    assert "Ship the parser fix for ticket PARSE-17" in result.text
