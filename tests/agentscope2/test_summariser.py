"""The compactor's model for AgentScope 2.x: one tool-less agent reused across the requests of
a compaction, each request with its own system prompt and a fresh context."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from copaw_context.agentscope2.summariser import AgentScopeSummariser
from copaw_context.testing import ModelCall, ScriptedChatModel, text_step


def _sent(call: ModelCall) -> list[tuple[str, str]]:
    """(role, text) of each message the model received."""
    return [(m["role"], "".join(b.get("text", "") for b in m["content"])) for m in call.formatted]


@pytest.mark.parametrize("stream", [False, True])
async def test_one_agent_serves_every_request_with_a_fresh_context(stream: bool) -> None:
    model = ScriptedChatModel([text_step("first reply"), text_step("second reply")], stream=stream)
    summariser = AgentScopeSummariser(model)
    assert await summariser.complete("prompt one", "request one") == "first reply"
    assert await summariser.complete("prompt two", "request two") == "second reply"
    assert summariser.agents_built == 1
    first, second = (_sent(call) for call in model.calls)
    assert first[0] == ("system", "prompt one") and first[-1][1].endswith("request one")
    assert second[0] == ("system", "prompt two")
    assert not any("one" in text for _role, text in second), second
    assert len(second) == len(first)


async def test_overlapping_requests_get_agents_of_their_own() -> None:
    both_sent = asyncio.Event()

    async def first(_call: ModelCall) -> Any:
        await both_sent.wait()  # the second request starts while this one is out
        return text_step("a")

    def second(_call: ModelCall) -> Any:
        both_sent.set()
        return text_step("b")

    model = ScriptedChatModel([first, second, text_step("c")])
    summariser = AgentScopeSummariser(model)
    replies = await asyncio.gather(
        summariser.complete("p", "request a"), summariser.complete("p", "request b")
    )
    assert sorted(replies) == ["a", "b"] and summariser.agents_built == 2
    assert await summariser.complete("p", "request c") == "c"
    assert summariser.agents_built == 2  # an idle one was reused


async def test_an_agent_whose_request_failed_is_not_reused() -> None:
    def boom(_call: ModelCall) -> Any:
        raise RuntimeError("provider down")

    model = ScriptedChatModel([boom, text_step("after")])
    summariser = AgentScopeSummariser(model)
    with pytest.raises(RuntimeError, match="provider down"):
        await summariser.complete("p", "request")
    assert await summariser.complete("p", "again") == "after"
    assert summariser.agents_built == 2
    assert not any(text == "request" for _role, text in _sent(model.calls[-1]))
