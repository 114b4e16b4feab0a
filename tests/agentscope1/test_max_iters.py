"""The model call a 1.x ReActAgent makes after ``max_iters`` fits the window too."""

from __future__ import annotations

import json
from pathlib import Path

from agentscope.message import Msg

from copaw_context.core.tokens import make_token_counter
from copaw_context.testing import text_step, tool_calls_step
from tests.agentscope1.helpers import build_agent, settings


def run_cmd(cmd: str) -> str:
    """Run a command.

    Args:
        cmd (`str`): The command.
    """
    return f"{cmd}: " + "log line with some words in it\n" * 30_000  # about 1 MB


async def test_the_summarizing_call_after_max_iters_fits_the_window(tmp_path: Path) -> None:
    window = 6000
    calls = [("run_cmd", {"cmd": f"job{i}"}) for i in range(6)]
    agent, hook, model = await build_agent(
        tmp_path,
        [tool_calls_step(*calls), text_step("I could not finish; here is where it stands.")],
        [run_cmd],
        config=settings(window, compactor="extractive"),
        context_size=window,
    )
    agent.max_iters = 1
    reply = await agent(Msg("user", "run the six jobs", "user"))
    assert reply.get_text_content() == "I could not finish; here is where it stands."
    last = model.calls[-1]
    assert "maximum iterations" in json.dumps(last.formatted), "the summarizing call"
    counter = make_token_counter("o200k_base")
    sent = counter.count(json.dumps(last.formatted, ensure_ascii=False) + json.dumps(last.tools))
    assert sent <= window * 1.1, f"{sent} tokens sent to a {window}-token window"
    await hook.close()
