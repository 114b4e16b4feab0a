"""The prompt-cache figure on a real AgentScope 2.x agent: each model call's event carries
its common prefix with the previous input, and ``/context`` shows the session's share."""

from __future__ import annotations

from pathlib import Path

from agentscope.message import UserMsg

from copaw_context import MemoryCompactionHook
from copaw_context.core.events import ContextEvent
from copaw_context.testing import ScriptedChatModel, text_step, tool_calls_step
from tests.fake_host import engine_config
from tests.helpers import allow, make_agent


def build_log(query: str) -> str:
    """Read the build log.

    Args:
        query (`str`): What to look for.
    """
    return f"{query}: " + "compile ok\n" * 50


async def test_each_call_reuses_the_whole_previous_input_while_it_only_grows(
    tmp_path: Path,
) -> None:
    events: list[ContextEvent] = []
    hook = MemoryCompactionHook(engine_config(100_000), tmp_path, on_event=events.append)
    model = ScriptedChatModel(
        [
            tool_calls_step(("build_log", {"query": "errors"})),
            tool_calls_step(("build_log", {"query": "warnings"}), ("build_log", {"query": "x"})),
            text_step("all green"),
            tool_calls_step(("build_log", {"query": "tests"})),
            text_step("tests pass"),
        ],
        context_size=100_000,
    )
    agent = await make_agent(hook, model, [allow(build_log)])
    await agent.reply(UserMsg("user", "check the build"))
    await agent.reply(UserMsg("user", "and the tests?"))
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
