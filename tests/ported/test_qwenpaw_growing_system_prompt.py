"""Ports QwenPaw's per-turn system prompt rebuild (AGENTS.md, MEMORY.md grow during a chat): a
system prompt that grows mid-session is counted anew and every model input stays within the
window, on either major."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from copaw_context import installed_agentscope_major
from tests.reliability.agent_session import agent_config
from tests.reliability.drivers import HostDriver
from tests.reliability.invariants import StepFigures, check_model_input


def test_system_prompt_grows_mid_session(driver: HostDriver, tmp_path: Path) -> None:
    window = 4000
    problems: list[str] = []
    figures = StepFigures()
    systems: list[str] = []

    async def main(ws: Path) -> None:
        async def answer(call: Any) -> list[Any]:
            formatted = await driver.provider_inputs(call)
            systems.append(str(formatted["openai"][0].get("content")))
            try:
                check_model_input(formatted, driver.tool_schemas(call), window, figures)
            except AssertionError as error:
                problems.append(str(error))
            return driver.text_step("ok " * 80)

        hook = driver.hook(agent_config(window, "extractive"), ws)
        agent = await driver.agent(hook, driver.model([answer] * 10, context_size=window), [])
        for i in range(10):
            if i == 4:
                grown = "You are careful. " + "memory fact line. " * 400  # ~1,600 tokens
                if installed_agentscope_major() >= 2:
                    agent._system_prompt = grown
                else:
                    agent._sys_prompt = grown
            await driver.ask(agent, f"q{i} " + "words " * 150)

    asyncio.run(main(tmp_path))
    assert "memory fact line" in systems[-1], "the grown system prompt never reached the model"
    assert not problems, problems
