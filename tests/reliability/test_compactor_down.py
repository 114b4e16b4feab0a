"""A compactor down for 100 turns (issue 17 item 17): a backend raising on every call, and
one answering garbage, behind a real agent of either major, with a restart at turn 50.

The circuit breaker keeps the compactor from being called at every compaction: after
``compactor_failure_limit`` automatic compactions in a row whose call failed, the next ones
are extractive for a pause that doubles; the pause survives the restart (it is saved with the
agent's state); the closing ``/compact`` still tries the model. Every model input is checked
by :class:`AgentSession` (within the window, valid, the latest request in it; nothing lost).
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.reliability.agent_session import AgentSession, Turn
from tests.reliability.budget import record, scaled
from tests.reliability.compactor_kit import WINDOW, Events, turn
from tests.reliability.drivers import HostDriver

RETRIES = 1
LIMIT = 3  # compactor_failure_limit's default
BREAKER = "compactor_breaker"  # its state's key in the engine's session state


def _calling(events: Events) -> list[tuple[Any, int]]:
    """Each compaction with the compactor calls made for it."""
    out: list[tuple[Any, int]] = []
    before = 0
    for event, mark in zip(events, events.marks, strict=True):
        if event.kind == "compaction":
            out.append((event, mark - before))
            before = mark
    return out


def _check_breaker(compactions: list[tuple[Any, int]]) -> None:
    """Never more than LIMIT automatic compactions in a row call the failing compactor."""
    in_a_row = 0
    for event, made in compactions:
        if event.trigger != "auto":
            continue
        in_a_row = in_a_row + 1 if made else 0
        assert in_a_row <= LIMIT, "the compactor was called past the failure limit"


async def scenario(driver: HostDriver, fault: str, directory: Path) -> dict[str, Any]:
    calls: list[int] = []
    events = Events(calls)

    async def down(call: Any) -> Any:
        calls.append(1)
        if fault == "exception":
            raise RuntimeError("provider 503: upstream unavailable")
        return driver.text_step("lorem ipsum, no sections here. " * 30)

    session = AgentSession(
        driver,
        directory,
        window=WINDOW,
        compactor="llm",
        compactor_model=driver.model([down] * 2000, context_size=WINDOW),
        light={"compactor_timeout_seconds": 0.2, "compactor_retries": RETRIES},
        events=events,
    )
    await session.start()
    turns = scaled(100, 300)
    for number in range(turns):
        if number == turns // 2:
            saved = (await driver.engine_state(session.hook, session.agent)).get(BREAKER)
            await session.restart()
            loaded = (await driver.engine_state(session.hook, session.agent)).get(BREAKER)
            assert saved and loaded == saved, "the breaker's state did not survive the restart"
        await session.run(turn(number))
    before_command = len(calls)
    await session.run(Turn("/compact"))
    assert len(calls) > before_command, "/compact did not try the model"
    compactions = _calling(events)
    _check_breaker(compactions)
    pauses = [e for e in events if e.kind == "compactor_paused"]
    assert pauses, "the breaker never paused the compactor"
    auto = [(e, made) for e, made in compactions if e.trigger == "auto"]
    return {
        "turns": session.figures.steps,
        "model_calls": session.figures.model_calls,
        "compactor_calls": len(calls),
        "compactions": len(auto),
        "compactions_calling_compactor": sum(1 for _, made in auto if made),
        "extractive": sum(1 for e, _ in auto if e.method == "extractive"),
        "pauses": len(pauses),
        "max_input_ratio": round(session.figures.max_input_ratio, 3),
        "lost": session.figures.lost,
        "over_window": session.figures.over_window,
    }


@pytest.mark.parametrize("fault", ["exception", "garbage"])
def test_a_compactor_down_for_100_turns_is_paused_not_hammered(
    driver: HostDriver, fault: str
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        figures = asyncio.run(scenario(driver, fault, Path(directory)))
    assert figures["lost"] == 0 and figures["over_window"] == 0, figures
    record(f"compactor_down[{fault}]", **figures)
