"""PostgreSQL leases held by advisory locks, on a real server: a holder killed with SIGKILL
frees its lease at once, a live one is kept to its time and then ended, racers get one
winner, a lost connection is replaced, and a database of schema version 1 migrates."""

from __future__ import annotations

import asyncio
import signal
import sys
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from copaw_context.core.store.leases import hold_lease
from copaw_context.core.store.postgres import PostgresStore
from copaw_context.core.store.postgres_schema import MIGRATIONS, SCHEMA_VERSION
from copaw_context.core.store.protocol import StoreError
from copaw_context.testing import ManualClock

ROOT = Path(__file__).resolve().parents[3]
TTL = 600.0  # far longer than any test: only the advisory lock can explain a takeover


async def _rows(dsn: str, query: str, *args: Any) -> list[tuple[Any, ...]]:
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as connection:
        cursor = await connection.execute(query, args)
        return await cursor.fetchall() if cursor.description else []


async def _lease_row(dsn: str, workspace: str, name: str) -> list[tuple[Any, ...]]:
    return await _rows(
        dsn,
        "SELECT token, holder_pid FROM copaw_leases WHERE workspace = %s AND name = %s",
        workspace,
        name,
    )


@pytest.fixture
async def stores(pg_dsn: str) -> AsyncIterator[list[PostgresStore]]:
    """Four stores of one workspace (as four replicas), sharing one clock."""
    clock = ManualClock(time.time())
    workspace = f"agent-{uuid.uuid4().hex}"
    made = [PostgresStore(pg_dsn, workspace, clock=clock, max_connections=2) for _ in range(4)]
    for store in made:
        await store.open()
    try:
        yield made
    finally:
        for store in made:
            await store.close()


def _clock(store: PostgresStore) -> ManualClock[float]:
    clock = store._clock
    assert isinstance(clock, ManualClock)
    return clock


async def test_a_holder_killed_with_sigkill_frees_the_lease_at_once(pg_dsn: str) -> None:
    workspace = f"agent-{uuid.uuid4().hex}"
    holder = await asyncio.create_subprocess_exec(
        *[sys.executable, "-m", "tests.core.store.lease_worker", pg_dsn, workspace],
        *["consolidate", str(TTL)],
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
    )
    assert holder.stdout is not None
    try:
        token = (await holder.stdout.readline()).decode().strip()
        assert token, "the holder process did not take the lease"
        store = PostgresStore(pg_dsn, workspace)
        await store.open()
        try:
            assert await store.acquire_lease("consolidate", TTL) is None  # alive: kept
            holder.send_signal(signal.SIGKILL)
            assert await asyncio.wait_for(holder.wait(), 60) == -signal.SIGKILL
            # Its row says 600 s more; its lock went with the process: taken now.
            async with hold_lease(store, "consolidate", 60, TTL, poll_seconds=0.02) as lease:
                assert lease.token != token
                [(held, pid)] = await _lease_row(pg_dsn, workspace, "consolidate")
                assert held == lease.token and pid is not None
        finally:
            await store.close()
    finally:
        if holder.returncode is None:
            holder.kill()
            await holder.wait()


async def test_a_store_closed_without_releasing_frees_its_leases(
    stores: list[PostgresStore],
) -> None:
    first, second = stores[:2]
    assert await first.acquire_lease("run", TTL) is not None
    assert await second.acquire_lease("run", TTL) is None
    await first.close()  # as a replica whose connections are gone
    async with hold_lease(second, "run", 60, TTL, poll_seconds=0.02):
        assert await stores[2].acquire_lease("run", TTL) is None


async def test_a_live_holder_is_kept_until_its_time_then_ended(
    stores: list[PostgresStore], pg_dsn: str
) -> None:
    holder, taker, third = stores[:3]
    lease = await holder.acquire_lease("consolidate", 10)
    assert lease is not None
    _clock(holder).advance(9)
    assert await taker.acquire_lease("consolidate", 10) is None  # alive and in its time
    _clock(holder).advance(2)  # past its time, its connection still open: a hung holder
    taken = await taker.acquire_lease("consolidate", 10)
    assert taken is not None  # its backend was ended
    [(token, _)] = await _lease_row(pg_dsn, holder.workspace_id, "consolidate")
    assert token == taken.token
    assert await holder.renew_lease(lease, 10) is None  # the old holder learns it
    await holder.release_lease(lease)  # and leaves the new one alone
    assert await third.acquire_lease("consolidate", 10) is None
    renewed = await taker.renew_lease(taken, 10)
    assert renewed is not None and renewed.token == taken.token
    await taker.release_lease(renewed)
    assert await third.acquire_lease("consolidate", 10) is not None


async def test_stores_racing_for_one_lease_get_one_winner(stores: list[PostgresStore]) -> None:
    won = await asyncio.gather(*(store.acquire_lease("run", TTL) for store in stores))
    winners = [lease for lease in won if lease is not None]
    assert len(winners) == 1
    owner = stores[won.index(winners[0])]
    await owner.close()  # its row stays, its lock is gone: a dead holder's row
    rest = [store for store in stores if store is not owner]
    deadline = asyncio.get_running_loop().time() + 60
    won = []
    while not any(won):  # until the closed connection's backend has gone
        assert asyncio.get_running_loop().time() < deadline, "the dead holder's lock stayed"
        won = await asyncio.gather(*(store.acquire_lease("run", TTL) for store in rest))
        await asyncio.sleep(0.02)
    assert len([lease for lease in won if lease is not None]) == 1


async def test_a_lost_lease_connection_is_replaced_while_the_row_is_unchanged(
    stores: list[PostgresStore], pg_dsn: str
) -> None:
    holder, other = stores[:2]
    lease = await holder.acquire_lease("run", TTL)
    assert lease is not None
    [(_, pid)] = await _lease_row(pg_dsn, holder.workspace_id, "run")
    await _rows(pg_dsn, "SELECT pg_terminate_backend(%s, 10000)", pid)  # a network blip
    renewed = await holder.renew_lease(lease, TTL)
    assert renewed is not None and renewed.token == lease.token
    [(_, now_pid)] = await _lease_row(pg_dsn, holder.workspace_id, "run")
    assert now_pid != pid
    assert await other.acquire_lease("run", TTL) is None
    await holder.release_lease(renewed)
    assert await other.acquire_lease("run", TTL) is not None


async def _fresh_database(pg_dsn: str, name: str) -> str:
    async with await psycopg.AsyncConnection.connect(pg_dsn, autocommit=True) as admin:
        await admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        await admin.execute(f"CREATE DATABASE {name}")
    return make_conninfo(pg_dsn, dbname=name)


async def test_a_database_of_schema_version_1_migrates(pg_dsn: str) -> None:
    dsn = await _fresh_database(pg_dsn, "copaw_leases_v1")
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as old:
        for statement in MIGRATIONS[0]:
            await old.execute(statement)
        await old.execute("CREATE TABLE copaw_schema (version int NOT NULL)")
        await old.execute("INSERT INTO copaw_schema VALUES (1)")
        # A lease an older replica holds: no holder, no lock, 100 s to go.
        expiry = time.time() + 100
        await old.execute("INSERT INTO copaw_leases VALUES ('a1', 'run', 'old', %s)", [expiry])
    clock = ManualClock(time.time())
    store = PostgresStore(dsn, "a1", clock=clock)
    await store.open()
    try:
        assert await _rows(dsn, "SELECT version FROM copaw_schema") == [(SCHEMA_VERSION,)]
        assert await _lease_row(dsn, "a1", "run") == [("old", None)]
        assert await store.acquire_lease("run", 10) is None  # kept to its time limit
        clock.advance(101)
        lease = await store.acquire_lease("run", 10)
        assert lease is not None
        [(token, pid)] = await _lease_row(dsn, "a1", "run")
        assert token == lease.token and pid is not None
        await store.release_lease(lease)
        assert await _lease_row(dsn, "a1", "run") == []
    finally:
        await store.close()


async def test_a_hung_holder_this_role_may_not_end_is_reported(pg_dsn: str) -> None:
    dsn = await _fresh_database(pg_dsn, "copaw_leases_roles")
    role = f"copaw_taker_{uuid.uuid4().hex[:12]}"
    clock = ManualClock(time.time())
    holder = PostgresStore(dsn, "a1", clock=clock)  # the server's superuser
    await holder.open()
    await _rows(dsn, f"CREATE ROLE {role} LOGIN")
    try:
        await _rows(dsn, f"GRANT ALL ON SCHEMA public TO {role}")
        await _rows(dsn, f"GRANT ALL ON ALL TABLES IN SCHEMA public TO {role}")
        taker = PostgresStore(make_conninfo(dsn, user=role), "a1", clock=clock)
        await taker.open()
        try:
            lease = await holder.acquire_lease("consolidate", 10)
            assert lease is not None
            clock.advance(11)
            [(_, pid)] = await _lease_row(dsn, "a1", "consolidate")
            with pytest.raises(StoreError, match=f"backend pid {pid}.*pg_signal_backend"):
                await taker.acquire_lease("consolidate", 10)
            assert await holder.renew_lease(lease, 10) is None  # its time is up all the same
        finally:
            await taker.close()
    finally:
        await holder.close()
        async with await psycopg.AsyncConnection.connect(pg_dsn, autocommit=True) as admin:
            await admin.execute("DROP DATABASE copaw_leases_roles WITH (FORCE)")
            await admin.execute(f"DROP ROLE {role}")
