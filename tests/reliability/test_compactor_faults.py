"""Guarantee 4: whatever the LLM compactor does (raises, times out, raises CancelledError,
answers nothing, prose without sections, its template or system prompt echoed, a 1 MB
reply, tool calls instead of text, hallucinated turns), the session goes on within the
window, the previous summary is kept, and the compactor is not called in a storm: at most
``1 + compactor_retries`` attempts (plus one re-ask of an oversized reply) per compaction,
at most one compaction per model call, and no compactor call for an automatic compaction
within one growth margin (``recompact_growth_ratio`` of the window) of a compaction that
left the context crowded.

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

from tests.reliability.agent_session import Action, AgentSession, Turn
from tests.reliability.budget import record, scaled
from tests.reliability.compactor_kit import WINDOW, Events, turn
from tests.reliability.drivers import HostDriver
from tests.reliability.engine_session import filler
from tests.summaries import six_section_summary

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


def check_storm(events: Events, most: int) -> int:
    """At most ``most`` compactor calls per compaction, and none for an automatic compaction
    within one growth margin of a compaction that left the context crowded (the storm
    guard); returns how many compactions the guard kept from calling the compactor."""
    margin = int(0.05 * WINDOW)  # recompact_growth_ratio's default
    previous: Any = None
    before, guarded = 0, 0
    for event, mark in zip(events, events.marks, strict=True):
        if event.kind != "compaction":
            continue
        made, before = mark - before, mark
        assert made <= most, f"{made} compactor calls for one compaction"
        crowded = previous is not None and (
            previous.tokens_after > previous.threshold_tokens - margin
        )
        near = previous is not None and event.tokens_before < previous.tokens_after + margin
        if crowded and near and event.trigger == "auto":
            assert made == 0, "the compactor was called again within the growth margin"
            guarded += 1
        previous = event
    return guarded


async def scenario(driver: HostDriver, name: str, directory: Path) -> dict[str, Any]:
    fault = faults(driver)[name]
    calls: list[int] = []

    events = Events(calls)

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
    driver_turns = scaled(10, 40)
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
    guarded = check_storm(events, (1 + RETRIES) * per_attempt + 1)
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
        "storm_guarded": guarded,
        "max_input_ratio": round(session.figures.max_input_ratio, 3),
        "lost": session.figures.lost,
        "over_window": session.figures.over_window,
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
    record(f"compactor_faults[{name}]", **figures)


def test_no_compactor_storm_when_pinned_content_crowds_the_window(driver: HostDriver) -> None:
    """Pinned requests fill most of the window: every compaction leaves it crowded, and
    small steps follow. The failing compactor is not called again until the context grew by
    the margin (the storm guard compacts extractively meanwhile)."""

    async def run(directory: Path) -> dict[str, Any]:
        calls: list[int] = []
        events = Events(calls)

        async def failing(call: Any) -> Any:
            calls.append(1)
            raise RuntimeError("provider 500")

        session = AgentSession(
            driver,
            directory,
            window=WINDOW,
            compactor="llm",
            compactor_model=driver.model([failing] * 400, context_size=WINDOW),
            light={"compactor_retries": RETRIES},
            events=events,
        )
        await session.start()
        for number in range(11):  # pinned requests, each under the request cut
            await session.run(Turn(f"pinned {number}: " + filler(3200, number), pinned=True))
        for number in range(scaled(12, 60)):
            small = Turn(f"step {number}: " + filler(300, number), (Action(sizes=(900,)),))
            await session.run(small)
        guarded = check_storm(events, 1 + RETRIES + 1)
        return {
            "guarded": guarded,
            "compactor_calls": len(calls),
            "turns": session.figures.steps,
            "lost": session.figures.lost,
            "over_window": session.figures.over_window,
        }

    with tempfile.TemporaryDirectory() as directory:
        figures = asyncio.run(run(Path(directory)))
    assert figures["guarded"] >= 1, f"the storm guard never had to act: {figures}"
    record("compactor_storm", **figures)
