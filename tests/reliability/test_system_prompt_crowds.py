"""A system prompt that fills most of the window: an automatic compaction whose summary
would take more than it replaces keeps the messages and cuts instead, and every model input
stays within the window (ported from QwenPaw's threshold-guard cases; found from outside:
2,898 -> 3,041 tokens in a 3,000-token window, every later input over it)."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.reliability.agent_session import agent_config
from tests.reliability.budget import record
from tests.reliability.drivers import HostDriver
from tests.reliability.invariants import StepFigures, check_model_input


@pytest.mark.parametrize(("window", "prompt_words"), [(3000, 2300), (2000, 1500)])
def test_a_crowding_system_prompt_never_pushes_the_input_over(
    driver: HostDriver, window: int, prompt_words: int
) -> None:
    problems: list[str] = []
    figures = StepFigures()
    events: list[Any] = []

    async def main(workspace: Path) -> list[str]:
        async def answer(call: Any) -> Any:
            formatted = await driver.provider_inputs(call)
            try:
                check_model_input(formatted, driver.tool_schemas(call), window, figures)
            except AssertionError as error:
                problems.append(str(error))
            return driver.text_step("ok")

        hook = driver.hook(agent_config(window, "extractive"), workspace, on_event=events.append)
        model = driver.model([answer] * 8, context_size=window)
        agent = await driver.agent(hook, model, [], system_prompt="rule " * prompt_words)
        return [await driver.ask(agent, f"q{i} " + "words " * 100) for i in range(8)]

    with tempfile.TemporaryDirectory() as name:
        replies = asyncio.run(main(Path(name)))
    grew = [e for e in events if e.kind == "compaction" and e.tokens_after > e.tokens_before]
    assert replies == ["ok"] * 8
    assert not grew, [(e.tokens_before, e.tokens_after) for e in grew]
    assert figures.over_window == 0, problems
    record(
        f"system_prompt_crowds[{window}]",
        model_calls=figures.model_calls,
        max_input_ratio=round(figures.max_input_ratio, 3),
        over_window=figures.over_window,
        compactions_that_grew=len(grew),
    )
