"""Stage 1's offload and ``read_file`` through the workspace store (issue 20, step 5): on a
real PostgreSQL the saved result is a blob, its notice names the key, and another replica
(another folder, the same agent id) follows the notice from the database; hostile keys are
refused; the compactor's tails and the TTL cleanup ask the store; a store that is down
degrades to today's local file. Without a store nothing changes (the file's path and bytes)."""

from __future__ import annotations

import json
import logging
import re
import uuid
from pathlib import Path

import psycopg
import pytest

from copaw_context.core.config.running import RunningConfig, parse_running_config
from copaw_context.core.context.step_context import StepContext
from copaw_context.core.steps.cut import _is_our_request_cut
from copaw_context.core.store.postgres import PostgresStore
from copaw_context.core.store.protocol import StoreError
from copaw_context.core.store.select import STORE_ENV
from copaw_context.core.toolresults._saved_tails import forget_tails
from copaw_context.core.toolresults.offload_cut import offload_and_cut, offload_parts
from copaw_context.core.toolresults.store_blobs import StoreBlobs
from copaw_context.core.toolresults.truncation import parse_truncation_notice
from copaw_context.core.tools.read_tool import ReadFileTool
from copaw_context.testing import ManualClock

_KEY = re.compile(r"tool_result/[0-9a-f]{32}\.txt")
_TEXT = "".join(f"row {i}: {'数据' * (i % 5)} value={i * 7}\n" for i in range(4000)) + "END"


def _workspace(root: Path, agent_id: str) -> Path:
    root.mkdir(parents=True)
    (root / "agent.json").write_text(json.dumps({"id": agent_id}), encoding="utf-8")
    return root


def _config(**pruning: float) -> RunningConfig:
    section = {"tool_result_pruning_config": pruning}
    return parse_running_config({"running": {"light_context_config": section}})


async def _follow(tool: ReadFileTool, first: str) -> tuple[list[str], list[str]]:
    """Follow the notices from the excerpt ``first`` to the end: (the bodies, the paths)."""
    parsed = parse_truncation_notice(first)
    assert parsed is not None
    bodies, paths = [parsed[0]], []
    notice = parsed[1]
    for _ in range(200):
        assert notice.file_path is not None
        paths.append(notice.file_path)
        result, _ = await tool.read(notice.file_path, notice.next_line, None, notice.next_offset)
        assert result.ok, result.text
        again = parse_truncation_notice(result.text)
        if again is None:  # read to the end (no end_line: no range notice)
            bodies.append(result.text)
            return bodies, paths
        bodies.append(again[0])
        notice = again[1]
    raise AssertionError("the notices never ended")


async def test_without_a_store_the_offload_writes_todays_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(STORE_ENV, raising=False)
    ctx = StepContext(RunningConfig(), tmp_path)
    assert ctx.blobs is None and ReadFileTool.from_config(ctx.config, tmp_path).blobs is None
    cut, saved = await offload_and_cut(ctx.store, _TEXT, 2000, tmp_path)
    parsed = parse_truncation_notice(cut)
    assert parsed is not None and saved is not None
    assert parsed[1].file_path == str(tmp_path / "tool_result" / saved.name)
    assert saved.read_bytes() == _TEXT.encode()


async def test_replica_b_follows_the_notice_replica_a_saved(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(STORE_ENV, pg_dsn)
    a = _workspace(tmp_path / "a" / "ws", "agent-replicas")
    b = _workspace(tmp_path / "b" / "other", "agent-replicas")
    ctx_a = StepContext(RunningConfig(), a)
    cut, saved = await offload_and_cut(ctx_a.store, _TEXT, 2000, a)
    parsed = parse_truncation_notice(cut)
    assert parsed is not None and saved is not None
    key = parsed[1].file_path
    assert key is not None and _KEY.fullmatch(key), key
    assert not saved.exists()  # in the database, not in replica A's folder
    db = PostgresStore(pg_dsn, "agent-replicas")
    await db.open()
    try:
        assert (await db.read_lines(key)).data == _TEXT.encode()
    finally:
        await db.close()

    tool_b = ReadFileTool.from_config(RunningConfig(), b)
    bodies, paths = await _follow(tool_b, cut)
    assert "".join(bodies) == _TEXT
    assert set(paths) == {key}  # every notice names the key, never a local path
    await ctx_a.blobs.close() if ctx_a.blobs else None
    await tool_b.blobs.close() if tool_b.blobs else None


async def test_hostile_keys_are_refused_with_a_clear_error(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(STORE_ENV, pg_dsn)
    a = _workspace(tmp_path / "a", "agent-owner")
    other = _workspace(tmp_path / "c", "agent-stranger")
    ctx = StepContext(RunningConfig(), a)
    cut, _ = await offload_and_cut(ctx.store, _TEXT, 2000, a)
    parsed = parse_truncation_notice(cut)
    assert parsed is not None and parsed[1].file_path is not None
    key = parsed[1].file_path
    stranger = ReadFileTool.from_config(RunningConfig(), other)
    result, entry = await stranger.read(key)
    assert not result.ok and entry is None
    assert "not a saved result of this workspace" in result.text and "agent-stranger" in result.text
    assert not (other / key).exists()
    (tmp_path / "secret.txt").write_text("secret", encoding="utf-8")
    for hostile in ("tool_result/../../secret.txt", f"tool_result/../{key}", "../secret.txt"):
        result, entry = await stranger.read(hostile)
        assert not result.ok and result.text.startswith("Error:"), hostile
        assert "secret" not in result.text.split("Error:", 1)[1].replace("secret.txt", "")
    for store in (ctx.blobs, stranger.blobs):
        assert store is not None
        await store.close()


async def test_the_compactors_tails_and_the_cleanup_ask_the_store(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(STORE_ENV, pg_dsn)
    ws = _workspace(tmp_path / "ws", "agent-tails")
    ctx = StepContext(_config(offload_retention_days=1), ws)
    kept = await ctx.store.save_parts([_TEXT])
    gone = await ctx.store.save_parts(["another\n" * 3000])
    assert kept.key and gone.key
    assert await ctx.store.cleanup([]) == []  # both are young
    async with await psycopg.AsyncConnection.connect(pg_dsn) as connection:  # two days old
        await connection.execute(
            "UPDATE copaw_blobs SET stamp = stamp - 2 * 86400 WHERE workspace = %s",
            ("agent-tails",),
        )
    forget_tails()  # a replica that did not write them: from the database
    tails = await ctx.store.read_tails([kept.path, gone.path, ws / "elsewhere.txt"], 4096)
    assert tails[0] is not None and _TEXT.endswith(tails[0]) and tails[0].endswith("END")
    assert tails[1] is not None and tails[1].startswith("another\n")
    assert tails[2] is None
    removed = await ctx.store.cleanup([kept.path.name])
    assert [p.name for p in removed] == [gone.path.name]
    blobs = ctx.blobs
    assert blobs is not None
    store = await blobs.store()
    assert store is not None
    assert await store.blob_info(kept.key) is not None and await store.blob_info(gone.key) is None
    await ctx.store.settle()  # the store's sync, as a reply's end waits for it
    await blobs.close()


async def test_a_store_that_is_down_keeps_the_text_in_the_local_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(STORE_ENV, "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2")
    ws = _workspace(tmp_path / "ws", "agent-down")
    ctx = StepContext(RunningConfig(), ws)
    with caplog.at_level(logging.WARNING, logger="copaw_context"):
        cut, saved = await offload_and_cut(ctx.store, _TEXT, 2000, ws)
    parsed = parse_truncation_notice(cut)
    assert parsed is not None and saved is not None
    assert parsed[1].file_path == str(ws / "tool_result" / saved.name)  # today's notice
    assert saved.read_bytes() == _TEXT.encode()
    assert "cannot open the workspace store" in caplog.text
    assert ctx.blobs is not None and ctx.blobs.failure is not None
    tool = ReadFileTool.from_config(RunningConfig(), ws)
    result, _ = await tool.read(str(saved))  # the local file: read as today
    assert result.ok and _TEXT.startswith(result.text.split("\n[", 1)[0][:100])
    missing, _ = await tool.read("tool_result/" + "0" * 32 + ".txt")
    assert not missing.ok and "workspace store is unavailable" in missing.text


async def test_a_store_that_fails_after_opening_rests_and_the_files_take_the_saves(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(STORE_ENV, pg_dsn)
    ws = _workspace(tmp_path / "ws", "agent-rests")
    clock = ManualClock(0.0)
    blobs = StoreBlobs(RunningConfig(), ws.absolute(), retry_seconds=30.0, clock=clock)
    ctx = StepContext(RunningConfig(), ws)
    ctx.store.blobs = blobs
    first = await ctx.store.save_parts([_TEXT])
    assert first.key is not None
    store = await blobs.store()
    assert isinstance(store, PostgresStore)

    async def lost(*args: object) -> object:
        raise StoreError("the PostgreSQL store failed: server closed the connection unexpectedly")

    monkeypatch.setattr(store, "put_blob", lost)  # every put fails from now on
    with caplog.at_level(logging.WARNING, logger="copaw_context"):
        down = [await ctx.store.save_parts([_TEXT]) for _ in range(3)]
    assert all(s.key is None and s.path.read_bytes() == _TEXT.encode() for s in down)
    assert caplog.text.count("cannot save a tool result in the workspace store") == 1
    assert blobs.take_failure() is not None and blobs.take_failure() is None  # said once
    monkeypatch.undo()  # back
    clock.advance(31.0)
    again = await ctx.store.save_parts([_TEXT])
    assert again.key is not None and blobs.failure is None
    await blobs.close()


async def test_a_store_closed_behind_the_blobs_back_is_opened_again(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(STORE_ENV, pg_dsn)
    ws = _workspace(tmp_path / "ws", f"agent-{uuid.uuid4().hex}")
    blobs = StoreBlobs(RunningConfig(), ws.absolute())
    ctx = StepContext(RunningConfig(), ws)
    ctx.store.blobs = blobs
    first = await ctx.store.save_parts([_TEXT])
    store = await blobs.store()
    assert store is not None and store.is_open and first.key is not None
    await store.close()  # e.g. by code that took the store from the blobs
    assert not store.is_open
    again = await ctx.store.save_parts([_TEXT])
    assert again.key is not None and blobs.failure is None  # not the local file
    reopened = await blobs.store()
    assert reopened is not None and reopened.is_open and reopened is not store
    assert (await reopened.read_lines(first.key)).data == _TEXT.encode()
    await blobs.close()


async def test_a_cut_request_is_a_blob_another_replica_reads_and_stays_our_cut(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(STORE_ENV, pg_dsn)
    a = _workspace(tmp_path / "a", "agent-requests")
    b = _workspace(tmp_path / "b", "agent-requests")
    ctx_a, ctx_b = StepContext(RunningConfig(), a), StepContext(RunningConfig(), b)
    cut, saved = await offload_parts(ctx_a.request_store, [_TEXT], 2000, a)
    parsed = parse_truncation_notice(cut)
    assert parsed is not None and saved is not None and not saved.exists()
    key = parsed[1].file_path
    assert key is not None and re.fullmatch(r"dialog/requests/[0-9a-f]{32}\.txt", key), key
    bodies, _ = await _follow(ReadFileTool.from_config(RunningConfig(), b), cut)
    assert "".join(bodies) == _TEXT
    # Replica B's next step sees the cut and knows it for ours (the blob starts with it).
    assert await _is_our_request_cut(ctx_b, cut)
    forged = cut.replace(key, key.replace(key[-8:-4], "0000"))
    assert not await _is_our_request_cut(ctx_b, forged)
    for ctx in (ctx_a, ctx_b):
        await ctx.close_store()


async def test_a_cleanup_keeps_what_another_replicas_session_still_names(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(STORE_ENV, pg_dsn)
    config = _config(offload_retention_days=1)
    a = StepContext(config, _workspace(tmp_path / "a", "agent-manifests"))
    b = StepContext(config, _workspace(tmp_path / "b", "agent-manifests"))
    named = await a.store.save_parts([_TEXT])
    loose = await a.store.save_parts(["nobody names this\n" * 100])
    session = uuid.uuid4().hex
    await a.store.record_references(session, [named.path.name])  # replica A's session
    await a.store.settle()
    async with await psycopg.AsyncConnection.connect(pg_dsn) as connection:  # two days old
        await connection.execute(
            "UPDATE copaw_blobs SET stamp = stamp - 2 * 86400 WHERE workspace = %s",
            ("agent-manifests",),
        )
    # Replica B's context names neither; A's manifest in the store keeps the named one.
    removed = await b.store.cleanup([])
    assert [p.name for p in removed] == [loose.path.name]
    assert not list((tmp_path / "b" / "tool_result" / ".refs").glob("*.json"))  # not B's file
    store = PostgresStore(pg_dsn, "agent-manifests")
    await store.open()
    try:
        key = f"tool_result/.refs/{session}.json"
        doc = await store.get_document(key)
        assert doc.data is not None and named.path.name in doc.data.decode()
        broken = await store.put_document(key, b"{not json", doc.version)
        assert await b.store.cleanup([]) == []  # a manifest that cannot be read keeps all
        stale = json.dumps({"names": [named.path.name], "at": 0.0}).encode()
        await store.put_document(key, stale, broken.version)
    finally:
        await store.close()
        async with await psycopg.AsyncConnection.connect(pg_dsn) as connection:
            await connection.execute(  # kept above, its stamp was renewed: two days old again
                "UPDATE copaw_blobs SET stamp = stamp - 2 * 86400 WHERE workspace = %s",
                ("agent-manifests",),
            )
    removed = await b.store.cleanup([])  # the manifest is older than its age limit now
    assert [p.name for p in removed] == [named.path.name]
    for ctx in (a, b):
        await ctx.close_store()
