"""A 1.x turn interrupted during tool calls leaves a call without a result in the memory."""

from __future__ import annotations

import json
from pathlib import Path

from agentscope.message import Msg

from copaw_context.core.archive.store import read_archive
from copaw_context.core.tokens import make_token_counter
from copaw_context.testing import text_step, tool_calls_step
from tests.agentscope1.helpers import build_agent, settings


def run_cmd(cmd: str) -> str:
    """Run a command.

    Args:
        cmd (`str`): The command.
    """
    return "abc def\n" * 200


async def test_a_call_without_a_result_is_compacted_and_the_window_holds(tmp_path: Path) -> None:
    window = 4000
    steps = [tool_calls_step(("run_cmd", {"cmd": f"c{i}"})) for i in range(30)]
    agent, hook, model = await build_agent(
        tmp_path,
        [*steps, text_step("end")],
        [run_cmd],
        config=settings(window, compactor="extractive"),
        context_size=window,
        max_iters=40,
    )
    await agent.memory.add(Msg("user", "earlier request", "user"))
    orphan = Msg(
        "assistant",
        [{"type": "tool_use", "id": "orphan1", "name": "run_cmd", "input": {"cmd": "x"}}],
        "assistant",
    )
    await agent.memory.add(orphan)
    reply = await agent(Msg("user", "go", "user"))
    assert reply.get_text_content() == "end"
    counter = make_token_counter("o200k_base")
    for call in model.calls:
        text = json.dumps(call.formatted, ensure_ascii=False) + json.dumps(call.tools)
        assert counter.count(text) <= window * 1.1, "within the window (JSON overhead allowed)"
    archived = [
        r["message"]["id"] for p in (tmp_path / "dialog").glob("*.jsonl") for r in read_archive(p)
    ]
    assert orphan.id in archived
    assert orphan.id not in [m.id for m, _ in agent.memory.content]
    await hook.close()
