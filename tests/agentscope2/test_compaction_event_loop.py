"""A large compaction does its CPU-bound work off the event loop (issue item 7)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agentscope.message import AssistantMsg, Msg, TextBlock, UserMsg

from copaw_context import MemoryCompactionHook
from copaw_context.testing import ScriptedChatModel, text_step
from tests.agent_history import config
from tests.helpers import make_agent


def _large_history(turns: int = 15, chars_per_message: int = 100_000) -> list[Msg]:
    """About ``2 x turns x chars_per_message`` characters (3 MB by default) of text turns."""
    history: list[Msg] = []
    for t in range(turns):
        body = "".join(
            f"Line {i} of turn {t}: we must keep the API stable. "
            f"Error: failed to parse /src/m{t}/f{i % 50}.py\n"
            for i in range(chars_per_message // 90)
        )
        history.append(UserMsg("user", f"Request {t}: look at module m{t}.\n{body}"))
        history.append(AssistantMsg("assistant", [TextBlock(text=f"I will check m{t}. {body}")]))
    return history


async def test_a_3_mb_compaction_leaves_the_event_loop_serving_other_tasks(
    tmp_path: Path,
) -> None:
    hook = MemoryCompactionHook(
        config(200_000, compactor="extractive", token_counter="estimate"), tmp_path
    )
    agent = await make_agent(hook, ScriptedChatModel([text_step("unused")]))
    history = _large_history()
    assert sum(len(m.get_text_content() or "") for m in history) > 2_900_000
    agent.state.context = history
    ticks = 0
    running = True

    async def ticker() -> None:
        nonlocal ticks
        while running:
            await asyncio.sleep(0.001)
            ticks += 1

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    reply = await agent.reply(UserMsg("user", "/compact"))
    running = False
    await task
    assert (reply.get_text_content() or "").startswith("**Compact Complete!**")
    assert "Request 0: look at module m0." in str(agent.state.summary)
    # Blocked, the loop would tick only at the compaction's few awaits (about ten).
    assert ticks > 50, f"the event loop ticked only {ticks} times during the compaction"
