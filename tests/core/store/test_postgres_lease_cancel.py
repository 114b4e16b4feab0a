"""PostgreSQL leases cancelled at every await of acquire, renew and release (timeouts of 0
to 30 ms): no advisory lock is left held, no connection is left open, the lease can be
taken after each."""

from __future__ import annotations

import asyncio
import uuid

import psycopg

from copaw_context.core.store.postgres import PostgresStore
from copaw_context.core.store.postgres_leases import lease_key
from copaw_context.core.store.protocol import Lease

_OURS = (
    "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'"
    " AND pid <> pg_backend_pid() AND datname = current_database()"
)
_LOCK = (
    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
    " AND classid = %s::bigint::oid AND objid = %s::bigint::oid AND objsubid = 1"
)


async def _count(dsn: str, query: str, *args: int) -> int:
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as connection:
        row = await (await connection.execute(query, args)).fetchone()
        assert row is not None
        return int(row[0])


async def _settled(dsn: str, store: PostgresStore, connections: int) -> tuple[int, int]:
    """(the database's connections, the locks of the lease ``run``) once no more than
    ``connections`` and no lock are left (polled up to 10 s: a closed connection's backend
    takes a moment to go)."""
    key = lease_key(store.workspace_id, "run") & 0xFFFF_FFFF_FFFF_FFFF
    found = (-1, -1)
    for _ in range(500):
        found = await _count(dsn, _OURS), await _count(dsn, _LOCK, key >> 32, key & 0xFFFF_FFFF)
        if found[0] <= connections and found[1] == 0:
            break
        await asyncio.sleep(0.02)
    return found


async def test_cancelled_at_any_await_no_lock_or_connection_is_left(pg_dsn: str) -> None:
    before = await _count(pg_dsn, _OURS)  # other tests' stores still open, if any
    store = PostgresStore(pg_dsn, f"agent-{uuid.uuid4().hex}", max_connections=2)
    await store.open()
    try:
        for tenth_ms in range(0, 300, 3):
            limit = tenth_ms / 10_000
            lease: Lease | None = None
            try:
                async with asyncio.timeout(limit):
                    lease = await store.acquire_lease("run", 60)
            except TimeoutError:
                pass
            if lease is None:
                continue
            try:
                async with asyncio.timeout(limit):
                    lease = await store.renew_lease(lease, 60) or lease
            except TimeoutError:
                pass
            try:
                async with asyncio.timeout(limit):
                    await store.release_lease(lease)
            except TimeoutError:
                pass
            await store.release_lease(lease)  # once more: nothing left to do, or the rest
        connections, locks = await _settled(pg_dsn, store, before + 2)
        assert locks == 0 and connections <= before + 2  # the pool's 2 at most: no lease's
        taken = await store.acquire_lease("run", 60)
        assert taken is not None
        await store.release_lease(taken)
    finally:
        await store.close()
    assert await _settled(pg_dsn, store, before) <= (before, 0)
