"""The PostgreSQL workspace store under attack (issue 20), on a real PostgreSQL: hostile local
files in a replica's folder (links at the copies' positions, positions that lie, a day file
that is a link out or a fifo), hostile rows in the database (bytes that are not UTF-8, a huge
line, a manifest of 100k names, a session that is no manifest id), many replicas at once, the
store going down between the copy's refresh and the append. The copy never writes outside the
workspace and never loses or doubles a line of the database."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from copaw_context.core.archive.mirror import MIRROR_DIR
from copaw_context.core.context.step_context import StepContext
from copaw_context.core.errors import ArchiveError
from copaw_context.core.store.postgres import PostgresStore
from copaw_context.core.store.protocol import StreamRecord
from copaw_context.core.toolresults.store_blobs import StoreBlobs
from copaw_context.core.toolresults.store_refs import live_shared_names, put_manifest
from copaw_context.core.tools.read_tool import ReadFileTool
from tests.pg_server import pg_dsn
from tests.store_replicas import replica, shared_archive, store_config

__all__ = ["pg_dsn"]

_DAY = "2026-05-01T10:00:00+00:00"
_STREAM = "dialog/2026-05-01.jsonl"


def _msg(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


async def _db_lines(dsn: str, agent_id: str, stream: str = _STREAM) -> list[bytes]:
    store = PostgresStore(dsn, agent_id)
    await store.open()
    try:
        return [entry.data for entry in await store.read(stream)]
    finally:
        await store.close()


async def _db_append(dsn: str, agent_id: str, records: list[StreamRecord]) -> None:
    store = PostgresStore(dsn, agent_id)
    await store.open()
    try:
        await store.append(records)
    finally:
        await store.close()


def _copy_is_db(day: Path, lines: list[bytes]) -> None:
    """The local copy holds every line of the database once, in its order."""
    assert day.read_bytes() == b"".join(line + b"\n" for line in lines)


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


@pytest.fixture
def agent_id() -> str:
    return f"agent-{uuid.uuid4().hex}"


# ---------------------------------------------------------------------- hostile local files
async def test_a_position_file_linked_out_is_not_followed(
    pg_dsn: str, tmp_path: Path, agent_id: str
) -> None:
    outside = tmp_path / "outside.json"
    lie = json.dumps({agent_id: {"copied": 0, "size": 0}}).encode()
    outside.write_bytes(lie)
    ws = replica(tmp_path / "ws", agent_id)
    (ws / "dialog" / MIRROR_DIR).mkdir(parents=True)
    (ws / "dialog" / MIRROR_DIR / "2026-05-01.jsonl.json").symlink_to(outside)
    archive = shared_archive(store_config(pg_dsn), ws)
    await archive.append([_msg("one")], [_DAY], ["m-1"])
    await archive.append([_msg("two")], [_DAY], ["m-2"])
    assert outside.read_bytes() == lie
    _copy_is_db(ws / "dialog" / "2026-05-01.jsonl", await _db_lines(pg_dsn, agent_id))
    assert len(await _db_lines(pg_dsn, agent_id)) == 2


async def test_a_positions_folder_linked_out_is_not_written_and_blocks_nothing(
    pg_dsn: str, tmp_path: Path, agent_id: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    ws = replica(tmp_path / "ws", agent_id)
    (ws / "dialog").mkdir()
    (ws / "dialog" / MIRROR_DIR).symlink_to(outside, target_is_directory=True)
    (ws / "memory").mkdir()
    archive = shared_archive(store_config(pg_dsn), ws)
    for i in range(3):
        await archive.append([_msg(f"m{i}")], [_DAY], [f"m-{i}"])
    assert list(outside.iterdir()) == []
    lines = await _db_lines(pg_dsn, agent_id)
    assert len(lines) == 3
    _copy_is_db(ws / "dialog" / "2026-05-01.jsonl", lines)


@pytest.mark.parametrize(
    "position",
    [
        {"copied": 1000, "size": 10**9},  # copied larger than the stream
        {"copied": 1000, "size": 0},
        {"copied": -3, "size": -1},  # negative
        {"copied": "2", "size": "0"},  # strings
        {"copied": True, "size": 0},
        {"copied": 0, "size": 10**9},  # a size past the file's end
    ],
)
async def test_a_position_that_lies_neither_loses_nor_doubles_a_line(
    pg_dsn: str, tmp_path: Path, agent_id: str, position: dict[str, object]
) -> None:
    config = store_config(pg_dsn)
    a = shared_archive(config, replica(tmp_path / "a", agent_id))
    b_ws = replica(tmp_path / "b", agent_id)
    b = shared_archive(config, b_ws, session="s2")
    await a.append([_msg("m0"), _msg("m1")], [_DAY] * 2, ["m-0", "m-1"])
    await b.list_files()  # b's copy holds both lines
    saved = b_ws / "dialog" / MIRROR_DIR / "2026-05-01.jsonl.json"
    saved.write_text(json.dumps({agent_id: position}), encoding="utf-8")
    _forget_this_process(b_ws)
    await a.append([_msg("m2")], [_DAY], ["m-2"])
    await b.append([_msg("from b")], [_DAY], ["b-1"])
    await b.list_files()
    lines = await _db_lines(pg_dsn, agent_id)
    assert len(lines) == 4
    _copy_is_db(b_ws / "dialog" / "2026-05-01.jsonl", lines)


def _forget_this_process(ws: Path) -> None:
    """Drop this process's memory of what the copies held (another process starts)."""
    from copaw_context.core.store import copies

    for key in [k for k in copies._COPIED if k[0].startswith(str(ws))]:
        del copies._COPIED[key]


async def test_a_day_file_linked_out_of_the_workspace_is_refused(
    pg_dsn: str, tmp_path: Path, agent_id: str
) -> None:
    config = store_config(pg_dsn)
    a = shared_archive(config, replica(tmp_path / "a", agent_id))
    await a.append([_msg("secret")], [_DAY], ["m-0"])
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes(b"")
    b_ws = replica(tmp_path / "b", agent_id)
    (b_ws / "dialog").mkdir()
    (b_ws / "dialog" / "2026-05-01.jsonl").symlink_to(outside)
    b = shared_archive(config, b_ws, session="s2")
    await b.list_files()
    with pytest.raises(ArchiveError):
        await b.append([_msg("from b")], [_DAY], ["b-1"])
    assert outside.read_bytes() == b""
    assert len(await _db_lines(pg_dsn, agent_id)) == 1


async def test_a_fifo_as_the_day_file_never_blocks_the_archive(
    pg_dsn: str, tmp_path: Path, agent_id: str
) -> None:
    ws = replica(tmp_path / "ws", agent_id)
    (ws / "dialog").mkdir()
    fifo = ws / "dialog" / "2026-05-01.jsonl"
    os.mkfifo(fifo)
    archive = shared_archive(store_config(pg_dsn), ws)
    try:
        with pytest.raises(ArchiveError, match="not a regular file"):
            await asyncio.wait_for(archive.append([_msg("x")], [_DAY], ["m-0"]), 20)
    finally:  # a reader blocked on the fifo is let go, so the test never hangs
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert await _db_lines(pg_dsn, agent_id) == []


# ---------------------------------------------------------------------- hostile rows
async def test_lines_that_are_not_utf8_or_huge_are_copied_byte_for_byte(
    pg_dsn: str, tmp_path: Path, agent_id: str
) -> None:
    hostile = [
        b'{"session_id": "x", "archive_id": "1", "text": "\xed\xa0\x80 lone"}',
        b'{"session_id": "x", "archive_id": "2", "text": "\xff\xfe bad"}',
        b"not json at all \xc3",
        b'{"session_id": "x", "archive_id": "3", "text": "' + b"y" * (8 << 20) + b' tail"}',
    ]
    records = [StreamRecord(_STREAM, f"x/{i}", line) for i, line in enumerate(hostile)]
    await _db_append(pg_dsn, agent_id, records)
    config = store_config(pg_dsn)
    ws = replica(tmp_path / "ws", agent_id)
    archive = shared_archive(config, ws)
    assert [f.lines for f in await archive.list_files()] == [4]
    _copy_is_db(ws / "dialog" / "2026-05-01.jsonl", hostile)
    await archive.append([_msg("after them")], [_DAY], ["m-1"])
    _copy_is_db(ws / "dialog" / "2026-05-01.jsonl", await _db_lines(pg_dsn, agent_id))
    result, _ = await ReadFileTool.from_config(config, ws).read("dialog/2026-05-01.jsonl", 5)
    assert result.ok and "after them" in result.text
    ctx = StepContext(config, ws)
    hits = await ctx.memory.tools.index.search("after them")
    assert [h.path for h in hits] == ["dialog/2026-05-01.jsonl"]


async def test_a_manifest_of_100k_names_keeps_them_and_a_bad_session_is_skipped(
    pg_dsn: str, agent_id: str
) -> None:
    names = [f"{i:032x}.txt" for i in range(100_000)]
    store = PostgresStore(pg_dsn, agent_id)
    await store.open()
    try:
        session = uuid.uuid4().hex
        await put_manifest(store, "tool_result", session, names, 1000.0)
        for hostile in ("../../etc/passwd", "a b", "..", "x" * 300):
            line = json.dumps({"session": hostile}).encode()
            await store.append([StreamRecord("tool_result/.refs/sessions.jsonl", hostile, line)])
        live = await live_shared_names(store, "tool_result", 1001.0, 60.0)
    finally:
        await store.close()
    assert live == set(names)


async def test_a_session_id_that_is_no_manifest_id_is_refused(pg_dsn: str, agent_id: str) -> None:
    store = PostgresStore(pg_dsn, agent_id)
    await store.open()
    try:
        with pytest.raises(ValueError, match="manifest id"):
            await put_manifest(store, "tool_result", "Not-Hex", ["0" * 32 + ".txt"], 1.0)
        assert await store.read("tool_result/.refs/sessions.jsonl") == []
    finally:
        await store.close()


# ---------------------------------------------------------------------- many at once
async def test_twenty_appends_of_the_same_records_from_two_replicas_land_once(
    pg_dsn: str, tmp_path: Path, agent_id: str
) -> None:
    config = store_config(pg_dsn)
    replicas = [shared_archive(config, replica(tmp_path / n, agent_id)) for n in "ab"]
    batch = [_msg(f"m{i}") for i in range(5)]
    ids = [f"m-{i}" for i in range(5)]
    calls = [replicas[i % 2].append(batch, [_DAY] * 5, ids) for i in range(20)]
    results = await asyncio.gather(*calls, return_exceptions=True)
    assert [r for r in results if isinstance(r, BaseException)] == []
    lines = await _db_lines(pg_dsn, agent_id)
    assert [json.loads(line)["archive_id"] for line in lines] == ids
    for archive in replicas:
        await archive.list_files()
        _copy_is_db(archive.directory / "2026-05-01.jsonl", lines)


# ---------------------------------------------------------------------- the store going down
async def test_the_pool_closed_between_the_refresh_and_the_append(
    pg_dsn: str, tmp_path: Path, agent_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store closed behind the archive's back is opened again for the append: the
    messages land once, in the database and the local copy (a store that stays dead is
    the next test's)."""
    ws = replica(tmp_path / "ws", agent_id)
    archive = shared_archive(store_config(pg_dsn), ws)
    await archive.append([_msg("before")], [_DAY], ["m-0"])
    refresh = archive.mirror.refresh
    closed: list[object] = []

    async def refresh_then_close(streams: list[str] | None = None) -> bool:
        done = await refresh(streams)
        store = await archive.mirror.opener.store()
        assert store is not None
        await store.close()
        closed.append(store)
        return done

    monkeypatch.setattr(archive.mirror, "refresh", refresh_then_close)
    await archive.append([_msg("during")], [_DAY], ["m-1"])
    reopened = await archive.mirror.opener.store()
    assert closed and reopened is not None and reopened.is_open and reopened is not closed[0]
    assert len(await _db_lines(pg_dsn, agent_id)) == 2
    monkeypatch.undo()
    await archive.mirror.refresh()
    lines = (ws / "dialog" / "2026-05-01.jsonl").read_bytes().splitlines()
    assert [b"during" in line for line in lines] == [False, True]


async def test_a_dead_store_between_the_refresh_and_the_append(
    pg_dsn: str, tmp_path: Path, agent_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = replica(tmp_path / "ws", agent_id)
    archive = shared_archive(store_config(pg_dsn), ws)
    await archive.append([_msg("before")], [_DAY], ["m-0"])
    dead = StoreBlobs(store_config("postgresql://nobody@127.0.0.1:1/none"), ws)
    refresh = archive.mirror.refresh

    async def refresh_then_die(streams: list[str] | None = None) -> bool:
        done = await refresh(streams)
        archive.mirror.opener = dead
        return done

    monkeypatch.setattr(archive.mirror, "refresh", refresh_then_die)
    with pytest.raises(ArchiveError, match="nothing was written"):
        await archive.append([_msg("during")], [_DAY], ["m-1"])
    assert len(await _db_lines(pg_dsn, agent_id)) == 1
