"""Guarantee 3: with the archive unwritable (disk full, read-only workspace) the context still
compacts and every model input stays within the window; what could not be archived waits
whole in the agent's saved session state (the pending-archive buffer), survives a restart,
and is written, with an event, as soon as the disk is writable again. Nothing is lost.

The workspace is a small tmpfs filled up or remounted read-only when the suite runs as root,
otherwise the fault-injecting file layer raises the same errors (tests/reliability/disk.py).
Every model input and every turn is checked by :class:`AgentSession` (valid for every
provider, within the window, the latest request in it, every part in exactly one of the
context, the archive and the pending buffer).
"""

from __future__ import annotations

import asyncio

import pytest

from tests.reliability.agent_session import Action, AgentSession, Turn
from tests.reliability.budget import record, scaled
from tests.reliability.disk import unreliable_disk
from tests.reliability.drivers import HostDriver
from tests.reliability.engine_session import filler
from tests.reliability.invariants import archived_keys

WINDOW = 6000


def turn(number: int) -> Turn:
    """A request, two rounds of parallel tool calls (one output offloaded), a closing text."""
    request = f"request {number}: " + filler(300, number)
    actions = (Action(sizes=(5000, 800)), Action(sizes=(1500,), cjk=number % 2 == 1, thinking=200))
    return Turn(request, actions)


async def scenario(driver: HostDriver, fault: str) -> dict[str, object]:
    broken_turns = scaled(8, 60)
    with unreliable_disk() as disk:
        session = AgentSession(driver, disk.root, window=WINDOW, compactor="extractive")
        await session.start()
        await session.run(turn(0))
        disk.fill() if fault == "disk_full" else disk.read_only()
        for number in range(1, broken_turns + 1):
            await session.run(turn(number))
        kinds = [e.kind for e in session.events]
        assert "archive_deferred" in kinds, "no event said the archive could not be written"
        assert "compaction" in kinds, "the context did not compact while the disk was broken"
        pending = await session.pending()
        assert pending, "nothing waits in the pending-archive buffer"

        await session.restart()  # the buffer is part of the saved agent state
        assert len(await session.pending()) == len(pending), "the buffer did not survive"
        for number in range(broken_turns + 1, broken_turns + 3):
            await session.run(turn(number))
        deferred = len(await session.pending())

        disk.restore()
        await session.restart()
        await session.run(turn(broken_turns + 3))
        assert "archive_flushed" in [e.kind for e in session.events]
        assert await session.pending() == [], "the buffer was not written out"
        archived = archived_keys(disk.root / "dialog", ())
        lost = session.created - set(archived) - set(driver.context_keys(session.agent))
        assert not lost, f"{len(lost)} part(s) in neither the archive nor the context"
        return {
            "disk": disk.kind,
            "turns": session.figures.steps,
            "model_calls": session.figures.model_calls,
            "max_input_ratio": round(session.figures.max_input_ratio, 3),
            "messages_deferred": deferred,
            "parts_checked": len(session.created),
            "lost": len(lost) + session.figures.lost,
            "over_window": session.figures.over_window,
        }


@pytest.mark.parametrize("fault", ["disk_full", "read_only"])
def test_an_unwritable_archive_keeps_the_window_and_loses_nothing(
    driver: HostDriver, fault: str
) -> None:
    figures = asyncio.run(scenario(driver, fault))
    assert float(str(figures["max_input_ratio"])) <= 1.0
    record(f"archive_unwritable[{fault}]", **figures)
