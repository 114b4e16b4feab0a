"""AgentScope 2.x appends its runtime-state hint (time, context length; ~100 tokens) after
our pre-reasoning step: the room we fit the window to leaves space for it, so a default
``Agent`` (the hint on) at the minimum window with memory on gets inputs within the window
and, with a provider that rejects over-window input, every reply (found from outside: 1.29x
the window on 2.x, the hint being the difference to 1.x)."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from agentscope.agent import Agent
from agentscope.tool import Toolkit

from copaw_context.core.config.running import parse_running_config
from copaw_context.testing import ContextWindowExceededError
from tests.reliability.as2_driver import As2Driver
from tests.reliability.budget import record
from tests.reliability.invariants import StepFigures, check_model_input

WINDOW = 1000


def test_a_default_agent_leaves_room_for_the_runtime_hint() -> None:
    driver = As2Driver()
    figures = StepFigures()
    hints: list[int] = []

    async def answer(call: Any) -> Any:
        formatted = await driver.provider_inputs(call)
        hints.append(sum("<system-reminder>" in str(m["content"]) for m in formatted["openai"]))
        try:
            check_model_input(formatted, driver.tool_schemas(call), WINDOW, figures)
        except AssertionError as error:
            raise ContextWindowExceededError(
                f"This model's maximum context length is {WINDOW} tokens ({error})"
            ) from None
        return driver.text_step("reply " + "word " * 30)

    async def main(workspace: Path) -> list[str]:
        config = parse_running_config(
            {
                "running": {
                    "max_input_length": WINDOW,
                    "memory": {"enabled": True},
                    "light_context_config": {
                        "token_counter": "o200k_base",
                        "compactor": "extractive",
                    },
                }
            }
        )
        hook = driver.hook(config, workspace)
        model = driver.model([answer] * 20, context_size=WINDOW)
        agent = Agent(
            name="a",
            system_prompt="s",
            model=model,
            toolkit=Toolkit(tools=await hook.list_tools()),
            middlewares=[hook],
        )
        replies = [await driver.ask(agent, f"question {i} " + "please " * 20) for i in range(6)]
        await hook.close()
        return replies

    with tempfile.TemporaryDirectory() as name:
        replies = asyncio.run(main(Path(name)))
    assert all(r.startswith("reply") for r in replies), replies
    assert figures.over_window == 0
    assert any(hints), hints  # the hint was there to make room for
    record(
        "runtime_hint_room",
        model_calls=figures.model_calls,
        max_input_ratio=round(figures.max_input_ratio, 3),
        over_window=figures.over_window,
        calls_with_hint=sum(1 for h in hints if h),
    )
