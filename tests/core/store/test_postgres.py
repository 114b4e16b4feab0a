"""What only the PostgreSQL store shows: replicas (separate stores on one workspace id) see
one another's data and leases, and a failure inside an append rolls all of it back."""

from __future__ import annotations

import asyncio
import json
import secrets
import uuid

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
