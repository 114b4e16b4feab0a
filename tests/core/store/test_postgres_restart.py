"""The database restarting under the PostgreSQL store (every client connection ended, as a
restart or a failover does): the pool's dead connections are never handed out, a lease's
holder learns at its next renewal that another took it over and its block is stopped, and
the next acquire works."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest

from copaw_context.core.store.leases import LeaseLostError, hold_lease
from copaw_context.core.store.postgres import PostgresStore

HOLD = 3.0
"""The holder's lease time: its first renewal (after 1 s) comes long after the takeover,
which follows the restart at once (a renewal first would take the free lock back)."""

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


async def test_a_holder_whose_lease_is_taken_over_after_a_restart_is_stopped(
    pair: list[PostgresStore], pg_dsn: str
) -> None:
    holder, other = pair
    inside = asyncio.Event()
    finished: list[Any] = []

    async def consolidate() -> None:
        async with hold_lease(holder, "consolidate", 1, HOLD, poll_seconds=0.01):
            inside.set()
            await asyncio.sleep(3600)  # the model call
            finished.append(True)

    running = asyncio.ensure_future(consolidate())
    await inside.wait()
    await restart(pg_dsn)
    # The holder's lock went with its connection: another replica takes it at once.
    async with hold_lease(other, "consolidate", 0, 60):
        with pytest.raises(LeaseLostError, match="consolidate"):
            await asyncio.wait_for(running, 60)  # its next renewal finds the row not its own
        assert finished == []
        assert await holder.acquire_lease("consolidate", 60) is None
    lease = await holder.acquire_lease("consolidate", 60)  # the next acquire works
    assert lease is not None
    await holder.release_lease(lease)


async def test_a_holder_that_cannot_renew_for_its_whole_time_is_stopped(
    pg_dsn: str,
) -> None:
    store = PostgresStore(pg_dsn, f"agent-{uuid.uuid4().hex}", max_connections=2)
    await store.open()
    try:
        with pytest.raises(LeaseLostError, match="run"):
            async with hold_lease(store, "run", 1, 0.3, poll_seconds=0.01):
                await store.close()  # no renewal can reach the database any more
                await asyncio.sleep(3600)
    finally:
        await store.close()


async def test_a_block_that_swallows_the_stop_still_learns_and_is_not_cancelled_after(
    pair: list[PostgresStore], pg_dsn: str
) -> None:
    holder, other = pair
    inside = asyncio.Event()
    outcome: list[str] = []

    async def stubborn() -> None:
        with pytest.raises(LeaseLostError):
            async with hold_lease(holder, "run", 1, HOLD, poll_seconds=0.01):
                inside.set()
                try:
                    await asyncio.sleep(3600)
                except asyncio.CancelledError:
                    outcome.append("stopped")  # and goes on regardless
        await asyncio.sleep(0)  # no cancellation of ours left pending on this task
        outcome.append("after")

    running = asyncio.ensure_future(stubborn())
    await inside.wait()
    await restart(pg_dsn)
    taken = await other.acquire_lease("run", 60)
    assert taken is not None
    await asyncio.wait_for(running, 60)
    assert outcome == ["stopped", "after"]
    await other.release_lease(taken)
