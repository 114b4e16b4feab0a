"""One hook instance serving several agents keeps their state apart (defects issue, item 10)."""

from __future__ import annotations

from pathlib import Path

from agentscope.message import AssistantMsg, TextBlock, UserMsg

from copaw_context import ContextEvent, MemoryCompactionHook
from copaw_context.agentscope2 import token_report
from copaw_context.agentscope2.middleware import LEGACY_STATE_KEY
from copaw_context.core.config.running import parse_running_config
from copaw_context.testing import ScriptedChatModel, scaled_usage, text_step
from tests.helpers import make_agent


def history(turns: int) -> list[object]:
    messages: list[object] = []
    for n in range(turns):
        messages.append(UserMsg("user", f"question {n}: " + "details " * 120))
        messages.append(AssistantMsg("assistant", [TextBlock(text=f"answer {n}: " + "ok " * 120)]))
    return messages


async def test_one_hook_on_two_agents_with_different_windows(tmp_path: Path) -> None:
    events: list[ContextEvent] = []
    # No max_input_length: each agent's window is its own model's context_size.
    config = parse_running_config(
        {
            "running": {
                "light_context_config": {"token_counter": "estimate", "compactor": "extractive"}
            }
        }
    )
    hook = MemoryCompactionHook(config, tmp_path, on_event=events.append)
    small_model = ScriptedChatModel(
        [text_step("small")] * 2, context_size=8000, usage=scaled_usage(2.0)
    )
    large_model = ScriptedChatModel([text_step("large")] * 2, context_size=200_000)
    small = await make_agent(hook, small_model, name="small")
    large = await make_agent(hook, large_model, name="large")
    small.state.context = history(14)
    large.state.context = history(14)
    for _ in range(2):
        await small.reply(UserMsg("user", "go on"))
        await large.reply(UserMsg("user", "go on"))

    assert {e.agent_name for e in events if e.kind == "compaction"} == {"small"}
    small_report = await token_report(hook, small)
    large_report = await token_report(hook, large)
    assert (small_report.window, large_report.window) == (8000, 200_000)
    assert small_report.calibration > 1.4, "the small agent's provider counts 2x"
    assert large_report.calibration < 1.2, "another agent's usage must not skew this one"
    assert (await hook.agent_stats(small))["compactions"] >= 1
    assert (await hook.agent_stats(large))["compactions"] == 0
    key = await hook.get_middleware_key()
    assert key in small.state.middle_context and key in large.state.middle_context
    assert small.state.middle_context[key] is not large.state.middle_context[key]


async def test_state_saved_under_the_old_key_is_moved(tmp_path: Path) -> None:
    config = parse_running_config(
        {"running": {"light_context_config": {"compactor": "extractive"}}}
    )
    hook = MemoryCompactionHook(config, tmp_path)
    agent = await make_agent(hook, ScriptedChatModel([text_step("hi")]))
    agent.state.middle_context[LEGACY_STATE_KEY] = {"summary": "## Goal\n- old goal"}
    await agent.reply(UserMsg("user", "hello"))
    key = await hook.get_middleware_key()
    assert LEGACY_STATE_KEY not in agent.state.middle_context
    assert agent.state.middle_context[key]["summary"] == "## Goal\n- old goal"
