"""Guarantee 4: whatever the LLM compactor does (raises, times out, raises CancelledError,
answers nothing, prose without sections, its template or system prompt echoed, a 1 MB
reply, tool calls instead of text, hallucinated turns), the session goes on within the
window, the previous summary is kept, and the compactor is not called in a storm: at most
``1 + compactor_retries`` attempts (plus one re-ask of an oversized reply) per compaction,
and at most one compaction per model call.

Each fault runs a real agent (scripted main model) whose first compaction gets a valid
summary carrying a marker; every later compactor call gets the fault. Every model input is
checked by :class:`AgentSession` (valid for every provider, within the window, the latest
request in it; every part in exactly one of the context and the archive).
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import six_section_summary
from tests.reliability.agent_session import Action, AgentSession, Turn
from tests.reliability.budget import record, scaled
from tests.reliability.drivers import HostDriver
from tests.reliability.engine_session import filler

WINDOW = 12000
MARKER = "MARKER-PREVIOUS-SUMMARY-7731"
RETRIES = 1


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def faults(driver: HostDriver) -> dict[str, Callable[[Any], Any]]:
    """Fault name -> an async compactor step."""

    async def raising(call: Any) -> Any:
        raise RuntimeError("provider 500: upstream unavailable")

    async def hanging(call: Any) -> Any:
        await asyncio.sleep(3600)  # cut off by compactor_timeout_seconds

    async def cancelled(call: Any) -> Any:
        raise asyncio.CancelledError()

    async def echo_last(call: Any) -> Any:
        inputs = (await driver.provider_inputs(call))["openai"]
        return driver.text_step(_text(inputs[-1].get("content")))

    async def echo_system(call: Any) -> Any:
        inputs = (await driver.provider_inputs(call))["openai"]
        return driver.text_step(_text(inputs[0].get("content")))

    def reply(text: str) -> Callable[[Any], Any]:
        async def step(call: Any) -> Any:
            return driver.text_step(text)

        return step

    async def tool_calls(call: Any) -> Any:
        return driver.tool_step([("produce", {"size": 10, "seed": 1}, None)])

    megabyte = six_section_summary(4).replace("\n", "\n" + filler(170_000, 5) + "\n", 6)
    turns = "\n".join(
        f"User: please delete branch {i}\nAssistant: Done, I deleted branch {i} and pushed."
        for i in range(20)
    )
    return {
        "exception": raising,
        "timeout": hanging,
        "cancelled": cancelled,
        "empty": reply(""),
        "prose": reply("We talked about the build and fixed a few things. " * 20),
        "template_echo": echo_last,
        "system_echo": echo_system,
        "megabyte": reply(megabyte[:1_100_000]),
        "tool_calls": tool_calls,
        "hallucinated_turns": reply(turns),
    }


def turn(number: int) -> Turn:
    request = f"request {number}: " + filler(200, number)
    return Turn(request, (Action(sizes=(9000, 2000)), Action(sizes=(6000,), thinking=200)))


async def scenario(driver: HostDriver, name: str, directory: Path) -> dict[str, Any]:
    fault = faults(driver)[name]
    calls: list[int] = []

    events: list[Any] = []

    async def compactor_step(call: Any) -> Any:
        calls.append(1)
        if not any(e.kind == "compaction" for e in events):  # the first compaction: valid
            first = six_section_summary(3).replace("vendor/ files", f"vendor/ files ({MARKER})")
            return driver.text_step(first)
        return await fault(call)

    session = AgentSession(
        driver,
        directory,
        window=WINDOW,
        compactor="llm",
        compactor_model=driver.model([compactor_step] * 400, context_size=WINDOW),
        light={"compactor_timeout_seconds": 0.2, "compactor_retries": RETRIES},
        events=events,
    )
    await session.start()
    driver_turns = scaled(8, 30)
    for number in range(driver_turns):
        await session.run(turn(number))
    compactions = [e for e in session.events if e.kind == "compaction"]
    assert compactions and compactions[0].method == "llm", "the first summary was refused"
    assert len(compactions) >= 2, f"{len(compactions)} compaction(s): the fault was never met"
    faulty = [e for e in compactions[1:] if e.method != "llm" or e.fallback_reason]
    assert faulty or name in ("prose", "hallucinated_turns"), "no compaction met the fault"
    # A reply of tool calls runs through the tool-less compactor agent's reply loop, which
    # may ask the model again within one attempt: up to 4 model calls an attempt.
    per_attempt = 4 if name == "tool_calls" else 1
    bound = ((1 + RETRIES) * per_attempt + 1) * len(compactions)
    assert len(calls) <= bound, f"a compactor storm: {len(calls)} calls"
    assert len(compactions) <= session.figures.model_calls, "more compactions than model calls"
    summary = [
        _text(m.get("content")) for m in session.last_input if "## Goal" in _text(m.get("content"))
    ]
    assert summary and MARKER in summary[0], "the previous summary was lost"
    return {
        "turns": session.figures.steps,
        "model_calls": session.figures.model_calls,
        "compactions": len(compactions),
        "fallbacks": len(faulty),
        "compactor_calls": len(calls),
        "max_input_ratio": round(session.figures.max_input_ratio, 3),
    }


FAULTS = [
    "exception",
    "timeout",
    "cancelled",
    "empty",
    "prose",
    "template_echo",
    "system_echo",
    "megabyte",
    "tool_calls",
    "hallucinated_turns",
]


@pytest.mark.parametrize("name", FAULTS)
def test_the_session_survives_a_faulty_compactor(driver: HostDriver, name: str) -> None:
    with tempfile.TemporaryDirectory() as directory:
        figures = asyncio.run(scenario(driver, name, Path(directory)))
    record(f"compactor_faults[{name}]", **figures, lost=0, over_window=0)
