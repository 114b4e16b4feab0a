"""1.x tool results inside ``Msg(role="user")`` (ReMe's layout, hand-built or loaded
histories) are paired by block, not role (issue 17 item 8): a real ReActAgent compacts such
a history and the model input never holds a result without its call."""

from __future__ import annotations

from pathlib import Path

from agentscope.message import Msg, TextBlock, ToolResultBlock, ToolUseBlock

from copaw_context.testing import openai_pairing_problems, text_step
from tests.agentscope1.helpers import build_agent, settings


def reme_history(turns: int, result_bytes: int = 3000) -> list[Msg]:
    """Each turn: the request, the call, its result as a ``role="user"`` message, an answer."""
    history: list[Msg] = []
    for t in range(turns):
        call_id = f"call_{t}"
        history.append(Msg("user", f"Request {t}: grep module m{t}.", "user"))
        history.append(
            Msg(
                "assistant",
                [ToolUseBlock(type="tool_use", id=call_id, name="grep", input={"q": f"m{t}"})],
                "assistant",
            )
        )
        output = [TextBlock(type="text", text=f"m{t}.py: match\n" * (result_bytes // 14))]
        history.append(
            Msg(
                "user",
                [ToolResultBlock(type="tool_result", id=call_id, name="grep", output=output)],
                "user",
            )
        )
        history.append(Msg("assistant", f"Module m{t} is used once.", "assistant"))
    return history


async def test_results_in_user_messages_never_lose_their_call(tmp_path: Path) -> None:
    steps = [text_step("done"), text_step("again")]
    agent, hook, model = await build_agent(
        tmp_path, steps, config=settings(6000, compactor="extractive"), context_size=6000
    )
    history = reme_history(6)
    await agent.memory.add(history)
    # the newest turn ends on the user-role result: the agent is still on it
    await agent.memory.delete([len(history) - 1])
    reply = await agent(Msg("user", "and now?", "user"))
    assert reply.get_text_content() == "done"
    for call in model.calls:
        assert openai_pairing_problems(call.formatted) == [], call.formatted
    report = await hook.report(agent)
    assert report.total <= report.threshold
    assert (tmp_path / "dialog").is_dir(), "the history was compacted"

    # a loaded history that stops mid-turn, on a user-role result: the agent continues it
    steps2 = [text_step("continued")]
    agent2, _, model2 = await build_agent(
        tmp_path / "second",
        steps2,
        config=settings(6000, compactor="extractive"),
        context_size=6000,
    )
    await agent2.memory.add(history[:-1])
    assert (await agent2()).get_text_content() == "continued"
    (sent,) = model2.calls
    assert openai_pairing_problems(sent.formatted) == [], sent.formatted
    calls = [c["id"] for m in sent.formatted for c in m.get("tool_calls") or []]
    results = [m["tool_call_id"] for m in sent.formatted if m.get("role") == "tool"]
    assert calls == results, "each result is sent with its call, or neither is"
    assert "Request 5" in str(sent.formatted), "the open request stays"
    answer = await agent(Msg("user", "/compact", "user"))
    assert "Compact Complete" in (answer.get_text_content() or "")
    await agent(Msg("user", "last one", "user"))
    assert openai_pairing_problems(model.calls[-1].formatted) == []
