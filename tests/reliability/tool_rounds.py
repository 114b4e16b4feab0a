"""One reasoning step whose tool calls a scripted model makes, on a real agent of either major."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.reliability.drivers import HostDriver
from tests.reliability.invariants import StepFigures, check_model_input

__all__ = ["tool_round"]


WINDOW = 200_000


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


class Hung(AssertionError):
    """A hang guard fired: the reply did not come within its timeout."""


async def tool_round(
    driver: HostDriver, workspace: Path, calls: list[tuple[str, dict[str, Any]]], tools: list[Any]
) -> tuple[list[str], StepFigures]:
    """One reply in which the model makes ``calls`` at once; the tool results it then sees
    (``Hung`` when the reply does not come)."""
    seen: list[list[dict[str, Any]]] = []
    figures = StepFigures()

    async def answer(call: Any) -> list[Any]:
        formatted = await driver.provider_inputs(call)
        check_model_input(formatted, driver.tool_schemas(call), WINDOW, figures)
        seen.append(formatted["openai"])
        return driver.text_step("checked")

    steps = [driver.tool_step([(name, args, None) for name, args in calls]), answer]
    hook = driver.hook(_config(), workspace)
    model = driver.model(steps, context_size=WINDOW)
    agent = await driver.agent(hook, model, tools)
    try:
        reply = await asyncio.wait_for(driver.ask(agent, "go"), 300)  # a hang guard
    except TimeoutError as timeout:
        raise Hung(f"no reply in 300 s to {len(calls)} call(s)") from timeout
    assert reply == "checked"
    # In the order of the calls: parallel calls may finish (and be stored) in any order.
    order = [c["id"] for m in seen[-1] for c in m.get("tool_calls") or ()]
    tool_messages = [m for m in seen[-1] if m.get("role") == "tool"]
    tool_messages.sort(key=lambda m: order.index(m["tool_call_id"]))
    results = [_text(m.get("content")) for m in tool_messages]
    assert len(results) == len(calls), f"{len(results)} results for {len(calls)} calls"
    return results, figures


def _config() -> Any:
    from tests.reliability.agent_session import agent_config

    return agent_config(WINDOW, "extractive")
