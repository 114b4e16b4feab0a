"""The LLM compactor under failure: retries with backoff, cancellations, oversized replies.

Every test drives real AgentScope agents with ScriptedChatModel; the backoff is made tiny.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from agentscope.message import UserMsg
from agentscope.types import ReplyFinishedReason

from copaw_context import ContextEvent, MemoryCompactionHook
from copaw_context.agentscope2._compactor import SummaryCompactor
from copaw_context.core.prompts import render_summary_message
from copaw_context.core.tokens import make_token_counter
from copaw_context.testing import ModelCall, ScriptedChatModel, Step, text_step
from tests.helpers import make_agent
from tests.test_agent_compaction import PREVIOUS_SUMMARY, block_keys, config, seeded_history

WINDOW = 4000


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
