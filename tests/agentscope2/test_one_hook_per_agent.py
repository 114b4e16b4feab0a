"""AgentScope 2.x: an agent built with two different hooks is refused at its first reply, as
``attach()`` refuses a second hook (``tests/reliability/test_hook_per_agent.py``; 1.x has no
way to build an agent with hooks)."""

from __future__ import annotations

from pathlib import Path

import pytest
from agentscope.agent import Agent
from agentscope.message import UserMsg
from agentscope.tool import Toolkit

from copaw_context import MemoryCompactionHook
from copaw_context.core.config.running import parse_running_config
from copaw_context.testing import ScriptedChatModel, text_step


async def test_an_agent_built_with_two_hooks_is_refused_at_its_first_reply(
    tmp_path: Path,
) -> None:
    config = parse_running_config({"running": {"max_input_length": 8000}})
    one = MemoryCompactionHook(config, tmp_path / "a")
    two = MemoryCompactionHook(config, tmp_path / "b")
    model = ScriptedChatModel([text_step("ok")], context_size=8000)
    agent = Agent(
        name="a", system_prompt="s", model=model, toolkit=Toolkit(), middlewares=[one, two]
    )
    with pytest.raises(ValueError, match="already has another copaw-context hook"):
        await agent.reply(UserMsg("user", "hello"))
    assert model.calls == []  # refused before any model call
