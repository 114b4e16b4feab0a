"""What only the PostgreSQL store shows: replicas (separate stores on one workspace id) see
one another's data and leases, and a failure inside an append rolls all of it back."""

from __future__ import annotations

import asyncio
import json
import secrets
import uuid
from typing import Any

import psycopg
import pytest

from copaw_context.core.store.postgres import PostgresStore
from copaw_context.core.store.protocol import StoreError, StreamRecord, VersionConflictError


async def replicas(dsn: str, count: int = 2) -> list[PostgresStore]:
    workspace_id = f"agent-{uuid.uuid4().hex}"
    stores = [PostgresStore(dsn, workspace_id, max_connections=2) for _ in range(count)]
    for store in stores:
        await store.open()
    return stores


async def test_replicas_share_streams_blobs_documents_and_leases(pg_dsn: str) -> None:
    one, two = await replicas(pg_dsn)
    try:
        line = json.dumps({"session_id": "s", "archive_id": "1"}).encode()
        await one.append([StreamRecord("dialog/2026-05-01.jsonl", "s/1", line)])
        again = await two.append([StreamRecord("dialog/2026-05-01.jsonl", "s/1", line)])
        assert again.skipped_keys == ("s/1",)  # exactly once across replicas
        blob = await one.put_blob("tool_result", ["a", "b"])
        assert (await two.read_lines(blob.key, 2)).data == b"b"  # a notice read anywhere
        doc = await one.put_document("MEMORY.md", b"# one\n", "")
        await two.put_document("MEMORY.md", b"# two\n", doc.version)
        with pytest.raises(VersionConflictError):
            await one.put_document("MEMORY.md", b"# lost\n", doc.version)
        lease = await one.acquire_lease("consolidate", 60)
        assert lease is not None and await two.acquire_lease("consolidate", 60) is None
        await one.release_lease(lease)
        assert await two.acquire_lease("consolidate", 60) is not None
    finally:
        for store in (one, two):
            await store.close()


async def test_another_workspace_sees_none_of_it(pg_dsn: str) -> None:
    (one,) = await replicas(pg_dsn, 1)
    (other,) = await replicas(pg_dsn, 1)
    try:
        blob = await one.put_blob("tool_result", ["private"])
        with pytest.raises(StoreError):
            await other.read_lines(blob.key)
        assert await other.acquire_lease("consolidate", 60) is not None
        assert await one.acquire_lease("consolidate", 60) is not None
    finally:
        for store in (one, other):
            await store.close()


async def test_a_failure_inside_an_append_writes_none_of_its_streams(pg_dsn: str) -> None:
    (store,) = await replicas(pg_dsn, 1)
    try:
        # A key too large for the unique index fails in the second stream's insert.
        huge = secrets.token_hex(4000)
        records = [
            StreamRecord("dialog/2026-05-01.jsonl", None, b'{"n": 1}'),
            StreamRecord("dialog/2026-05-02.jsonl", huge, b'{"n": 2}'),
        ]
        with pytest.raises(StoreError, match="nothing was written"):
            await store.append(records)
        assert await store.read("dialog/2026-05-01.jsonl") == []
        assert await store.streams("dialog/") == []
    finally:
        await store.close()


async def test_a_pool_of_one_connection_serves_many_callers(pg_dsn: str) -> None:
    # Ported from LangGraph's Postgres store tests, whose fixture runs every test on a single
    # connection and on a pool: here 30 concurrent appends, reads, puts and leases share one.
    store = PostgresStore(pg_dsn, f"agent-{uuid.uuid4().hex}", max_connections=1)
    await store.open()
    try:
        stream = "dialog/2026-05-01.jsonl"

        async def work(i: int) -> None:
            line = json.dumps({"session_id": "s", "archive_id": str(i)}).encode()
            await store.append([StreamRecord(stream, f"s/{i}", line)])
            await store.read(stream)
            await store.put_blob("tool_result", [f"blob {i}"])
            lease = await store.acquire_lease(f"lease-{i}", 5.0)
            assert lease is not None
            await store.release_lease(lease)

        await asyncio.wait_for(asyncio.gather(*(work(i) for i in range(30))), timeout=60)
        assert sorted(e.key or "" for e in await store.read(stream)) == sorted(
            f"s/{i}" for i in range(30)
        )
        assert len(await store.list_blobs("tool_result")) == 30
    finally:
        await store.close()


_LOST = "consuming input failed: server closed the connection unexpectedly"
"""libpq's text when the server goes away before its reply arrives."""


async def test_an_append_whose_commit_reply_is_lost_says_it_may_be_written(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (store,) = await replicas(pg_dsn, 1)
    committed = psycopg.AsyncTransaction.__aexit__

    async def lost_reply(self: psycopg.AsyncTransaction, *exc: object) -> bool:
        await committed(self, *exc)  # type: ignore[arg-type]
        raise psycopg.OperationalError(_LOST)

    records = [StreamRecord("dialog/2026-05-01.jsonl", f"s/{i}", b'{"i": %d}' % i) for i in (1, 2)]
    try:
        with monkeypatch.context() as patch:
            patch.setattr(psycopg.AsyncTransaction, "__aexit__", lost_reply)
            with pytest.raises(StoreError, match="may have been written: append them again"):
                await store.append(records)
        again = await store.append(records)  # what the caller is told to do
        assert again.appended == 0 and again.skipped_keys == ("s/1", "s/2")
        assert [e.data for e in await store.read("dialog/2026-05-01.jsonl")] == [
            b'{"i": 1}',
            b'{"i": 2}',
        ]
    finally:
        await store.close()


async def test_a_document_put_whose_reply_is_lost_is_read_back(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The write landed but its reply did not: the put succeeds (the caller neither undoes
    an edit the other replicas already see nor makes it twice); a write that did not land
    says the document is unchanged."""
    one, two = await replicas(pg_dsn)
    first = await one.put_document("MEMORY.md", b"# one\n", "")
    fetch = one._fetch
    landed = True

    async def reply_lost(query: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        if query.startswith(("UPDATE", "INSERT")):
            if landed:
                await fetch(query, params)
            raise StoreError(f"the PostgreSQL store failed: {_LOST}")
        return await fetch(query, params)

    try:
        monkeypatch.setattr(one, "_fetch", reply_lost)
        written = await one.put_document("MEMORY.md", b"# two\n", first.version)
        seen = await two.get_document("MEMORY.md")
        assert (seen.data, seen.version) == (b"# two\n", written.version)
        landed = False
        with pytest.raises(StoreError, match="MEMORY.md is unchanged"):
            await one.put_document("MEMORY.md", b"# three\n", written.version)
        assert (await two.get_document("MEMORY.md")).data == b"# two\n"

        async def down(query: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
            raise StoreError(f"the PostgreSQL store failed: {_LOST}")

        monkeypatch.setattr(one, "_fetch", down)
        with pytest.raises(StoreError, match="whether MEMORY.md was written is unknown"):
            await one.put_document("MEMORY.md", b"# four\n", written.version)
    finally:
        for store in (one, two):
            await store.close()


async def test_a_store_is_open_from_open_to_close(pg_dsn: str) -> None:
    store = PostgresStore(pg_dsn, f"agent-{uuid.uuid4().hex}")
    assert not store.is_open
    await store.open()
    assert store.is_open
    await store.close()
    assert not store.is_open
    with pytest.raises(StoreError, match="not open: await store.open"):
        await store.blob_info("tool_result/" + "0" * 32 + ".txt")
