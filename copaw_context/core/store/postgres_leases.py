"""The PostgreSQL store's leases: a row and a session-level advisory lock.

The row ``copaw_leases (workspace, name, token, expires_at, holder_pid)`` gives the lease its
token and time limit; the lock, ``pg_try_advisory_lock`` of a 64-bit key of the workspace
and the name (:func:`lease_key`), is held on a connection opened for the lease alone (never
a pooled one, which would carry the lock to its next user) until the release, which deletes
the row, unlocks and closes it. ``holder_pid`` is that connection's backend.

- Taking: the lock first, without waiting; held, the row is inserted, or taken over when
  its holder's lock is free (a holder that died: SIGKILL, a lost connection), at once and
  whatever its time; both in one statement. A lock held by another connection with the
  row's time still running: refused (``None``).
- A holder past its time whose connection still lives (a hung process): the next taker
  ends that backend (``pg_terminate_backend``, or closes the connection when it is this
  store's own) and waits for its lock (up to the connect timeout). A role that may not end
  it gets a :class:`StoreError` naming the pid and the grant it needs.
- Renewing: on the lease's connection, while the row is still this lease's and its time
  not up; a lost connection is replaced when the lock is free again and the row unchanged.
- A row without ``holder_pid`` (written before schema version 2) is kept to its time limit.

Cancelled while taking, the lease's connection is closed: no lock is left behind.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from typing import Any

import psycopg

from copaw_context.core.store.lines import check_key
from copaw_context.core.store.postgres_pool import NOW_SQL, PostgresPool
from copaw_context.core.store.protocol import Lease, StoreError

__all__ = ["PostgresLeases", "lease_key"]

_UPSERT_SQL = (
    "WITH got AS ({lock}) INSERT INTO copaw_leases"
    " (workspace, name, token, expires_at, holder_pid)"
    f" SELECT %(ws)s, %(name)s, %(token)s, {NOW_SQL} + %(ttl)s, pg_backend_pid() FROM got"
    " WHERE got.ok ON CONFLICT (workspace, name) DO UPDATE SET token = EXCLUDED.token,"
    " expires_at = EXCLUDED.expires_at, holder_pid = EXCLUDED.holder_pid"
    # Holding the lock, a row with a holder is a dead holder's; one without is an older
    # replica's (no lock), kept to its time limit.
    f" WHERE copaw_leases.holder_pid IS NOT NULL OR copaw_leases.expires_at <= {NOW_SQL}"
    " RETURNING expires_at"
)
_TRY_LOCK = "SELECT ok FROM pg_try_advisory_lock(%(key)s) AS ok"
_WAIT_LOCK = "SELECT true AS ok FROM pg_advisory_lock(%(key)s)"
_STATE_SQL = (
    "SELECT (SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted"
    " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    " AND classid = %(hi)s::bigint::oid AND objid = %(lo)s::bigint::oid AND objsubid = 1"
    f" LIMIT 1), lease.holder_pid, lease.expires_at <= {NOW_SQL}"
    " FROM (SELECT 1) AS one LEFT JOIN copaw_leases AS lease"
    " ON lease.workspace = %(ws)s AND lease.name = %(name)s"
)
_RENEW_SQL = (
    f"UPDATE copaw_leases SET expires_at = {NOW_SQL} + %(ttl)s"
    " WHERE workspace = %(ws)s AND name = %(name)s AND token = %(token)s"
    f" AND expires_at > {NOW_SQL} AND holder_pid = pg_backend_pid() RETURNING expires_at"
)
_RETAKE_SQL = (
    f"WITH got AS ({_TRY_LOCK}) UPDATE copaw_leases SET expires_at = {NOW_SQL} + %(ttl)s,"
    " holder_pid = pg_backend_pid() FROM got WHERE got.ok AND workspace = %(ws)s"
    f" AND name = %(name)s AND token = %(token)s AND expires_at > {NOW_SQL}"
    " RETURNING expires_at"
)


def lease_key(workspace: str, name: str) -> int:
    """The advisory lock's key of lease ``name`` of ``workspace``: 64 bits of a hash."""
    digest = hashlib.blake2b(
        f"{workspace}\0{name}".encode(), digest_size=8, person=b"copaw-lease"
    ).digest()
    return int.from_bytes(digest, "big", signed=True)


async def _let_go(connection: psycopg.AsyncConnection[Any]) -> None:
    """Unlock what ``connection`` holds (at once, rather than when its backend notices the
    close), then close it."""
    try:
        if not (connection.closed or connection.broken):
            await connection.execute("SELECT pg_advisory_unlock_all()")
    except psycopg.Error:
        pass  # lost: the server lets its locks go
    finally:
        await connection.close()


@dataclass
class _Held:
    """A lease this store holds: its own connection (holding the lock) and the lock's key."""

    connection: psycopg.AsyncConnection[Any]
    key: int

    @property
    def pid(self) -> int:
        return int(self.connection.info.backend_pid)


class PostgresLeases(PostgresPool):
    """The leases of :class:`~copaw_context.core.store.postgres.PostgresStore` (see the
    module docs)."""

    _held_made: dict[str, _Held] | None = None

    @property
    def _held(self) -> dict[str, _Held]:
        if self._held_made is None:
            self._held_made = {}
        return self._held_made

    async def acquire_lease(self, name: str, ttl_seconds: float) -> Lease | None:
        """The lock, then the row (see the module docs); ``None`` while another holds it."""
        args = self._lease_args(check_key(name, "lease"), ttl=float(ttl_seconds))
        key = lease_key(self._id, name)
        unsigned = key & 0xFFFF_FFFF_FFFF_FFFF
        rows = await self._fetch(
            _STATE_SQL, {**args, "hi": unsigned >> 32, "lo": unsigned & 0xFFFF_FFFF}
        )
        locker, row_pid, expired = rows[0]
        wait = False
        if locker is not None:
            if not (expired and row_pid == locker):
                return None  # held in its time (or just taken, or being released)
            await self._end_holder(name, int(locker))
            wait = True
        return await self._take(name, key, args, wait)

    async def _take(self, name: str, key: int, args: dict[str, Any], wait: bool) -> Lease | None:
        connection = await self._lease_connection()
        try:
            if wait:  # the ended holder's lock is freed when its backend has gone
                timeout = f"{max(1, int(self._timeout * 1000))}ms"
                await connection.execute("SELECT set_config('lock_timeout', %s, false)", [timeout])
            lock = _WAIT_LOCK if wait else _TRY_LOCK
            try:
                cursor = await connection.execute(
                    _UPSERT_SQL.format(lock=lock), {**args, "key": key}
                )
            except psycopg.errors.LockNotAvailable:
                rows = []  # another taker was first
            else:
                rows = await cursor.fetchall()
        except BaseException as error:
            await connection.close()
            if isinstance(error, psycopg.Error):
                raise StoreError(f"cannot take lease {name}: {error}") from error
            raise
        if not rows:
            await _let_go(connection)
            return None
        self._held[args["token"]] = _Held(connection, key)
        return Lease(name, args["token"], float(rows[0][0]))

    async def _end_holder(self, name: str, pid: int) -> None:
        """End the backend ``pid`` holding lease ``name`` past its time."""
        for token, held in list(self._held.items()):
            if not held.connection.closed and held.pid == pid:  # this store's own
                del self._held[token]
                await held.connection.close()
                return
        try:
            await self._fetch_raw("SELECT pg_terminate_backend(%(pid)s)", {"pid": pid})
        except psycopg.errors.InsufficientPrivilege as error:
            raise StoreError(
                f"the {name} lease of workspace {self._id} is past its time, but its holder's "
                f"connection (backend pid {pid}) is still open and this role may not end it: "
                "end that backend (SELECT pg_terminate_backend(pid)) or GRANT pg_signal_backend "
                "to this role"
            ) from error
        except psycopg.Error as error:
            raise StoreError(f"the PostgreSQL store failed: {error}") from error

    async def renew_lease(self, lease: Lease, ttl_seconds: float) -> Lease | None:
        """A later expiry while the row is still this lease's, its time not up and its lock
        held by this store; ``None`` otherwise."""
        self._pool  # noqa: B018 -- raises when the store is not open
        held = self._held.get(lease.token)
        if held is None:
            return None  # released, taken over or never this store's
        args = self._lease_args(lease.name, ttl=float(ttl_seconds), token=lease.token)
        rows: list[tuple[Any, ...]] = []
        try:
            cursor = await held.connection.execute(_RENEW_SQL, args)
            rows = await cursor.fetchall()
        except psycopg.Error:
            if not (held.connection.broken or held.connection.closed):
                raise StoreError(f"cannot renew lease {lease.name}") from None
            return await self._retake(lease, held, args)
        if not rows:
            await self._drop(lease.token)
            return None
        return Lease(lease.name, lease.token, float(rows[0][0]))

    async def _retake(self, lease: Lease, held: _Held, args: dict[str, Any]) -> Lease | None:
        """The lease's connection was lost: a new one takes the lock again if it is free and
        the row is still this lease's (a failure to connect is raised: tried again later)."""
        await held.connection.close()
        connection = await self._lease_connection()
        try:
            cursor = await connection.execute(_RETAKE_SQL, {**args, "key": held.key})
            rows = await cursor.fetchall()
        except BaseException as error:
            await connection.close()
            if isinstance(error, psycopg.Error):
                raise StoreError(f"cannot renew lease {lease.name}: {error}") from error
            raise
        if not rows:
            await _let_go(connection)
            self._held.pop(lease.token, None)
            return None
        held.connection = connection
        return Lease(lease.name, lease.token, float(rows[0][0]))

    async def release_lease(self, lease: Lease) -> None:
        """Delete the row if it is still this lease's, unlock, close the lease's connection."""
        self._pool  # noqa: B018 -- raises when the store is not open
        query = (
            "DELETE FROM copaw_leases WHERE workspace = %(ws)s AND name = %(n)s AND token = %(t)s"
        )
        params = {"ws": self._id, "n": lease.name, "t": lease.token}
        held = self._held.pop(lease.token, None)
        try:
            if held is not None and not held.connection.closed:
                try:
                    await held.connection.execute(query, params)
                    await held.connection.execute("SELECT pg_advisory_unlock(%s)", [held.key])
                    return
                except psycopg.Error:
                    pass  # the connection is lost, and its lock with it: the row by the pool
            await self._fetch(query, params)
        finally:
            if held is not None:
                await held.connection.close()

    async def _drop(self, token: str) -> None:
        held = self._held.pop(token, None)
        if held is not None:
            await _let_go(held.connection)

    async def close(self) -> None:
        """Close the leases' connections (their locks end: others take them at once), then
        the pool."""
        for token in list(self._held):
            await self._drop(token)
        await super().close()

    async def _lease_connection(self) -> psycopg.AsyncConnection[Any]:
        self._pool  # noqa: B018 -- raises when the store is not open
        try:
            return await psycopg.AsyncConnection.connect(
                self._dsn, autocommit=True, connect_timeout=max(1, int(self._timeout))
            )
        except psycopg.Error as error:
            raise StoreError(f"the PostgreSQL store failed: {error}") from error

    def _lease_args(self, name: str, **values: Any) -> dict[str, Any]:
        return self._args(name=name, token=values.pop("token", uuid.uuid4().hex), **values)

    async def _fetch_raw(self, query: str, params: dict[str, Any]) -> None:
        async with self._pool.connection() as connection:
            await connection.execute(query, params)
