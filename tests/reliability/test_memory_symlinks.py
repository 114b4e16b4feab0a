"""Memory symlinks: the dialog archive never follows a link out of the workspace.

Real agents on both majors compact into a workspace whose ``dialog/`` folder or day file is a
symbolic link (or hard link) to a file outside, also one swapped in mid-session. The archive
refuses each (an ``archive_deferred`` event), the messages wait in the pending buffer, the
outside files stay byte-identical and every reply still comes. Figures are counted.
"""

from __future__ import annotations

import asyncio
import os
from datetime import date
from pathlib import Path

import pytest

from tests.reliability.agent_session import Action, AgentSession, Turn
from tests.reliability.budget import record
from tests.reliability.drivers import HostDriver
from tests.reliability.engine_session import filler

WINDOW = 6000
TURNS = 6
ATTACKS = (
    "dialog_dir",
    "day_file",
    "day_hardlink",
    "swapped_mid_session",
    "tool_result_dir",
)
ARCHIVE_ATTACKS = ATTACKS[:4]


def _turn(number: int) -> Turn:
    return Turn(f"request {number}: " + filler(300, number), (Action(sizes=(3000, 800)),))


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _plant(attack: str, workspace: Path, outside: Path) -> None:
    day = workspace / "dialog" / f"{date.today().isoformat()}.jsonl"
    if attack == "tool_result_dir":
        os.symlink(outside, workspace / "tool_result", target_is_directory=True)
        return
    if attack == "dialog_dir":
        os.symlink(outside, workspace / "dialog", target_is_directory=True)
        return
    day.parent.mkdir(parents=True, exist_ok=True)
    day.unlink(missing_ok=True)
    if attack == "day_hardlink":
        os.link(outside / "victim.jsonl", day)
    else:
        os.symlink(outside / "victim.jsonl", day)


async def scenario(driver: HostDriver, attack: str, root: Path) -> dict[str, int]:
    workspace, outside = root / "ws", root / "outside"
    workspace.mkdir()
    outside.mkdir()
    (outside / "victim.jsonl").write_text('{"outside": "do not touch"}\n', encoding="utf-8")
    before = _snapshot(outside)
    session = AgentSession(driver, workspace, window=WINDOW, compactor="extractive")
    if attack != "swapped_mid_session":
        _plant(attack, workspace, outside)
    await session.start()
    replies = 0
    for number in range(TURNS):
        if attack == "swapped_mid_session" and number == 2:
            _plant("day_file", workspace, outside)
        await session.run(_turn(number))
        replies += 1
    after = _snapshot(outside)
    kinds = [e.kind for e in session.events]
    return {
        "turns": TURNS,
        "replies": replies,
        "compactions": kinds.count("compaction"),
        "archive_deferred": kinds.count("archive_deferred"),
        "messages_pending": len(await session.pending()),
        "outside_changed": sum(1 for k in before if after.get(k) != before[k]),
        "outside_created": len(set(after) - set(before)),
        "outside_removed": len(set(before) - set(after)),
        "over_window": session.figures.over_window,
        "lost": session.figures.lost,
    }


@pytest.mark.parametrize("attack", ATTACKS)
def test_archive_links_out_of_the_workspace_are_refused(
    driver: HostDriver, attack: str, tmp_path: Path
) -> None:
    figures = asyncio.run(scenario(driver, attack, tmp_path))
    record(f"memory_symlinks[{attack}]", **figures)
    assert figures["replies"] == figures["turns"]
    assert figures["compactions"] > 0
    assert figures["outside_changed"] + figures["outside_created"] == 0
    assert figures["outside_removed"] == 0
    if attack in ARCHIVE_ATTACKS:
        assert figures["archive_deferred"] > 0 and figures["messages_pending"] > 0
    assert figures["lost"] + figures["over_window"] == 0
