"""The database restarting under the PostgreSQL store (every client connection ended, as a
restart or a failover does): the pool's dead connections are never handed out, a lease's
holder learns at its next renewal that another took it over and its block is stopped, and
the next acquire works."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import psycopg
import pytest

from copaw_context.core.store.postgres import PostgresStore

_CLIENTS = (
    "SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend'"
    " AND pid <> pg_backend_pid() AND datname = current_database()"
)


async def restart(dsn: str) -> None:
    """End every other client connection of the database (what a restart does to them)."""
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as admin:
        await admin.execute(f"SELECT pg_terminate_backend(pid, 10000) FROM ({_CLIENTS}) AS c")


@pytest.fixture
async def pair(pg_dsn: str) -> AsyncIterator[list[PostgresStore]]:
    """Two stores of one workspace (two replicas)."""
    workspace = f"agent-{uuid.uuid4().hex}"
    made = [PostgresStore(pg_dsn, workspace, max_connections=3) for _ in range(2)]
    for store in made:
        await store.open()
    try:
        yield made
    finally:
        for store in made:
            await store.close()


async def test_after_a_restart_the_next_calls_work(pair: list[PostgresStore], pg_dsn: str) -> None:
    first, second = pair
    assert await first.streams("") == []  # the pools hold a connection each
    assert await second.streams("") == []
    await restart(pg_dsn)
    # A dead pooled connection is checked and replaced, not handed out to fail.
    assert await first.streams("") == []
    lease = await second.acquire_lease("run", 60)
    assert lease is not None
    await second.release_lease(lease)
