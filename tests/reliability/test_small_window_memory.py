"""The documented minimum window with memory on: the memory tools' schemas (~850 tokens) and
the summary leave almost no room, yet every model input fits the window and, with a provider
that rejects over-window input, every reply comes (found from outside: 1,247 tokens in a
1,000-token window from the second call on; the reply died at turn 1 with a strict provider)."""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from pathlib import Path
from typing import Any

import pytest

from copaw_context.core.config.running import parse_running_config
from copaw_context.testing import ContextWindowExceededError
from tests.reliability.budget import record
from tests.reliability.drivers import HostDriver
from tests.reliability.invariants import StepFigures, check_model_input

TURNS = 6


def _config(window: int) -> Any:
    return parse_running_config(
        {
            "running": {
                "max_input_length": window,
                "memory": {"enabled": True},
                "light_context_config": {"token_counter": "o200k_base", "compactor": "extractive"},
            }
        }
    )


@pytest.mark.parametrize("window", [1000, 1100])
def test_memory_on_at_the_minimum_window_fits_and_replies(driver: HostDriver, window: int) -> None:
    figures = StepFigures()
    problems: list[str] = []
    events: list[Any] = []

    async def main(workspace: Path) -> list[str]:
        def answer(number: int) -> Any:
            async def step(call: Any) -> Any:
                formatted = await driver.provider_inputs(call)
                try:
                    check_model_input(formatted, driver.tool_schemas(call), window, figures)
                except AssertionError as error:  # a provider enforcing the window
                    problems.append(str(error))
                    raise ContextWindowExceededError(
                        f"This model's maximum context length is {window} tokens. "
                        f"However, your messages resulted in more ({error})."
                    ) from None
                return driver.text_step(f"reply {number} " + "word " * 30)

            return step

        hook = driver.hook(_config(window), workspace, on_event=events.append)
        model = driver.model([answer(i) for i in range(60)], context_size=window)
        agent = await driver.agent(hook, model, [], system_prompt="s")
        replies = [await driver.ask(agent, f"question {i} " + "please " * 20) for i in range(TURNS)]
        await hook.close()
        return replies

    with tempfile.TemporaryDirectory() as name:
        replies = asyncio.run(main(Path(name)))
    assert [r.split(" ")[0] for r in replies] == ["reply"] * TURNS, replies
    assert figures.over_window == 0, problems
    warnings = [e for e in events if e.kind == "warning"]
    record(
        f"small_window_memory[{window}]",
        model_calls=figures.model_calls,
        max_input_ratio=round(figures.max_input_ratio, 3),
        over_window=figures.over_window,
        warnings=len(warnings),
    )


def test_fixed_parts_over_the_window_warn_once_and_replies_come(driver: HostDriver) -> None:
    """A system prompt and the memory tools' schemas that alone exceed the window cannot fit:
    one clear warning names the limit and the fix, and every reply still comes."""
    window = 1000
    figures = StepFigures()
    events: list[Any] = []

    async def main(workspace: Path) -> list[str]:
        async def answer(call: Any) -> Any:
            formatted = await driver.provider_inputs(call)
            with contextlib.suppress(AssertionError):  # cannot fit: counted below
                check_model_input(formatted, driver.tool_schemas(call), window, figures)
            return driver.text_step("ok")

        hook = driver.hook(_config(window), workspace, on_event=events.append)
        model = driver.model([answer] * 20, context_size=window)
        agent = await driver.agent(hook, model, [], system_prompt="rule " * 300)
        replies = [await driver.ask(agent, f"question {i}") for i in range(3)]
        await hook.close()
        return replies

    with tempfile.TemporaryDirectory() as name:
        replies = asyncio.run(main(Path(name)))
    wording = "exceed the 1000-token window"
    limit = [e for e in events if e.kind == "warning" and wording in e.message]
    assert replies == ["ok"] * 3
    assert len(limit) == 1, [e.message for e in events if e.kind == "warning"]
    assert "max_input_length" in limit[0].message and "memory.enabled" in limit[0].message
    record(
        "small_window_memory[fixed_over_window]",
        model_calls=figures.model_calls,
        max_input_ratio=round(figures.max_input_ratio, 3),
        over_window=figures.over_window,
        limit_warnings=len(limit),
    )
