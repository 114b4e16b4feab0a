"""The prompt-cache figure on a real AgentScope 1.x ReActAgent: each model call's event
carries its common prefix with the previous input, and ``/context`` shows the session's share."""

from __future__ import annotations

from pathlib import Path

from agentscope.message import Msg

from copaw_context.core.events import ContextEvent
from copaw_context.testing import text_step, tool_calls_step
from tests.agentscope1.helpers import build_agent, settings


def build_log(query: str) -> str:
    """Read the build log.

    Args:
        query (str): What to look for.
    """
    return f"{query}: " + "compile ok\n" * 50


async def test_each_call_reuses_the_whole_previous_input_while_it_only_grows(
    tmp_path: Path,
) -> None:
    steps = [
        tool_calls_step(("build_log", {"query": "errors"})),
        tool_calls_step(("build_log", {"query": "warnings"}), ("build_log", {"query": "x"})),
        text_step("all green"),
        tool_calls_step(("build_log", {"query": "tests"})),
        text_step("tests pass"),
    ]
    agent, hook, model = await build_agent(
        tmp_path, steps, [build_log], config=settings(100_000), context_size=100_000
    )
    events: list[ContextEvent] = []
    hook.engine.context.on_event = events.append
    await agent(Msg("user", "check the build", "user"))
    await agent(Msg("user", "and the tests?", "user"))
    calls = [e for e in events if e.kind == "model_call"]
    assert len(calls) == len(model.calls) == 5
    assert calls[0].prefix_reused_tokens == 0
    for previous, current in zip(calls, calls[1:], strict=False):
        assert current.prefix_reused_tokens == previous.tokens_before
    total = sum(e.tokens_before for e in calls)
    assert calls[-1].session_reused_share == sum(e.tokens_before for e in calls[:-1]) / total

    session = await hook.session(agent)
    reply = await hook.engine.run_command(session, "context", "")
    assert f"session {calls[-1].session_reused_share:.1%}" in reply, reply
    assert "5 calls" in reply
