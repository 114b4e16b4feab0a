"""The dialog archive in the workspace store (issue 20, step 6), on a real PostgreSQL: two
replicas (their own empty folders, one agent id) archive into the same day streams exactly
once; each replica's local day files copy every replica's lines in the database's order, the
same bytes the file archive writes; parts already archived are left out as the file archive
leaves them out; a copy a kill cut short is finished, not doubled; lines the folder held
before stay; a store that is down is an ``ArchiveError`` (the archive step keeps the
messages); recall and ``read_file`` on replica B see what replica A archived."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from copaw_context.core.archive.mirror import MIRROR_DIR
from copaw_context.core.archive.store import DialogArchive
from copaw_context.core.config.running import RunningConfig
from copaw_context.core.context.step_context import StepContext
from copaw_context.core.errors import ArchiveError
from copaw_context.core.store.postgres import PostgresStore
from copaw_context.core.tools.read_tool import ReadFileTool
from tests.pg_server import pg_dsn
from tests.store_replicas import replica, shared_archive, store_config

__all__ = ["pg_dsn"]

_DAY = "2026-05-01T10:00:00+00:00"


def _msg(text: str, *parts: str) -> dict[str, Any]:
    content = [{"type": "text", "id": p, "text": f"{text} {p}"} for p in parts] or text
    return {"role": "user", "content": content}


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


@pytest.fixture
def agent_id() -> str:
    return f"agent-{uuid.uuid4().hex}"


async def test_two_replicas_archive_once_and_both_copy_every_line(
    pg_dsn: str, tmp_path: Path, agent_id: str
) -> None:
    config = store_config(pg_dsn)
    a = shared_archive(config, replica(tmp_path / "a", agent_id))
    b = shared_archive(config, replica(tmp_path / "b", agent_id), session="s2")
    written = await a.append([_msg("first from A")], [_DAY], ["a-1"])
    assert [(f.path.name, f.lines) for f in written] == [("2026-05-01.jsonl", 1)]
    await b.append([_msg("from B")], [_DAY], ["b-1"])
    assert await a.append([_msg("first from A")], [_DAY], ["a-1"]) == []  # a retry: skipped
    files_a, files_b = await a.list_files(), await b.list_files()
    assert [f.lines for f in files_a] == [f.lines for f in files_b] == [2]
    day_a, day_b = files_a[0].path, files_b[0].path
    assert day_a.read_bytes() == day_b.read_bytes()
    rows = _lines(day_a)
    assert [(r["session_id"], r["archive_id"]) for r in rows] == [("s1", "a-1"), ("s2", "b-1")]
    assert rows[0]["message"] == _msg("first from A") and rows[0]["timestamp"] == _DAY

    store = PostgresStore(pg_dsn, agent_id)
    await store.open()
    try:
        entries = await store.read("dialog/2026-05-01.jsonl")
    finally:
        await store.close()
    assert [e.key for e in entries] == ["s1/a-1", "s2/b-1"]
    assert b"".join(e.data + b"\n" for e in entries) == day_a.read_bytes()


async def test_a_line_is_the_file_archives_line(pg_dsn: str, tmp_path: Path, agent_id: str) -> None:
    shared = shared_archive(store_config(pg_dsn), replica(tmp_path / "s", agent_id))
    plain_ws = replica(tmp_path / "f", agent_id)
    plain = DialogArchive(
        plain_ws / "dialog", session_id="s1", agent_name="bot", workspace=plain_ws
    )
    message = _msg("说明 naïve \U0001f600", "p1", "p2")
    await shared.append([message], [_DAY], ["m-1"], forms=["x"], part_keys=[["m/p1", "m/p2"]])
    await plain.append([message], [_DAY], ["m-1"], forms=["x"], part_keys=[["m/p1", "m/p2"]])
    got = _lines(shared.directory / "2026-05-01.jsonl")[0]
    want = _lines(plain_ws / "dialog" / "2026-05-01.jsonl")[0]
    assert got.pop("archived_at") and want.pop("archived_at")
    assert list(got) == list(want) and got == want


async def test_known_parts_are_left_out_across_replicas(
    pg_dsn: str, tmp_path: Path, agent_id: str
) -> None:
    config = store_config(pg_dsn)
    a = shared_archive(config, replica(tmp_path / "a", agent_id))
    b = shared_archive(config, replica(tmp_path / "b", agent_id))  # the same session, next turn
    await a.append([_msg("reply", "p1", "p2")], [_DAY], ["r-2"], part_keys=[["r/p1", "r/p2"]])
    # The reply grew on another worker (its id changed with its blocks): only p3 is new.
    await b.append(
        [_msg("reply", "p1", "p2", "p3")], [_DAY], ["r-3"], part_keys=[["r/p1", "r/p2", "r/p3"]]
    )
    rows = _lines((await a.list_files())[0].path)
    assert [r["archive_id"] for r in rows] == ["r-2", "r-3~2"]
    assert [b["id"] for b in rows[1]["message"]["content"]] == ["p3"]


async def test_a_copy_cut_short_is_finished_and_old_lines_stay(
    pg_dsn: str, tmp_path: Path, agent_id: str
) -> None:
    config = store_config(pg_dsn)
    b_ws = replica(tmp_path / "b", agent_id)
    day = b_ws / "dialog" / "2026-05-01.jsonl"
    day.parent.mkdir()
    old = b'{"session_id": "old", "message": {"role": "user", "content": "before"}}\n'
    day.write_bytes(old)  # written as files before the store was configured
    a = shared_archive(config, replica(tmp_path / "a", agent_id))
    await a.append([_msg(f"m{i}") for i in range(3)], [_DAY] * 3, [f"m-{i}" for i in range(3)])
    b = shared_archive(config, b_ws)
    assert [f.lines for f in await b.list_files()] == [4]
    copied = day.read_bytes()
    assert copied.startswith(old)

    # A kill after two more lines were copied, before the position was saved, and a torn line.
    await a.append([_msg("m3"), _msg("m4")], [_DAY] * 2, ["m-3", "m-4"])
    store_lines = (tmp_path / "a" / "dialog" / "2026-05-01.jsonl").read_bytes().splitlines(True)
    with open(day, "ab") as handle:
        handle.write(store_lines[3] + store_lines[4][:10])
    await b.list_files()
    assert day.read_bytes() == old + b"".join(store_lines)
    position = json.loads((day.parent / MIRROR_DIR / f"{day.name}.json").read_text())
    assert position[agent_id] == {"copied": 5, "size": os.path.getsize(day)}


async def test_a_store_that_is_down_is_an_archive_error(tmp_path: Path, agent_id: str) -> None:
    ws = replica(tmp_path / "ws", agent_id)
    down = shared_archive(store_config("postgresql://nobody@127.0.0.1:1/none"), ws)
    with pytest.raises(ArchiveError, match="workspace store is unavailable"):
        await down.append([_msg("kept")], [_DAY], ["k-1"])
    assert not (ws / "dialog" / "2026-05-01.jsonl").exists()
    assert await down.list_files() == []  # the listing degrades to the local files


async def test_step_context_recall_and_read_file_see_the_other_replicas_lines(
    pg_dsn: str, tmp_path: Path, agent_id: str
) -> None:
    config = store_config(pg_dsn)
    a_ws, b_ws = replica(tmp_path / "a", agent_id), replica(tmp_path / "b", agent_id)
    await shared_archive(config, a_ws).append(
        [_msg("the deploy key rotates every 17 days")], [_DAY], ["fact-1"]
    )
    ctx = StepContext(config, b_ws)
    assert ctx.mirror is not None
    hits = await ctx.memory.tools.index.search("rotates every 17 days")
    assert [(h.path, h.kind) for h in hits] == [("dialog/2026-05-01.jsonl", "dialog")]

    await shared_archive(config, a_ws).append([_msg("second line")], [_DAY], ["fact-2"])
    tool = ReadFileTool.from_config(config, b_ws)
    result, _ = await tool.read("dialog/2026-05-01.jsonl", 2)
    assert result.ok and "second line" in result.text


def test_without_a_store_the_archive_is_the_files(tmp_path: Path) -> None:
    ctx = StepContext(RunningConfig(), tmp_path)
    assert ctx.mirror is None
    assert ReadFileTool.from_config(RunningConfig(), tmp_path).mirror is None
