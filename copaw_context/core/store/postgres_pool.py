"""The PostgreSQL store's connections: one check and migration at open, then a pool
(autocommit; a transaction is asked for where one is needed). Each pooled connection is
checked before it is handed out, so the connections a database restart ended are replaced
instead of failing the next calls."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool

from copaw_context.core.store.lines import redact
from copaw_context.core.store.postgres_schema import migrate
from copaw_context.core.store.protocol import StoreError

__all__ = ["NOW_SQL", "PostgresPool"]

NOW_SQL = "COALESCE(%(now)s::float8, extract(epoch from clock_timestamp()))"
"""The time of a query: the store's clock when it has one, else the database's."""


class PostgresPool:
    """The pool of one workspace's store, opened by :meth:`open`, and its query helper."""

    def __init__(
        self,
        dsn: str,
        workspace_id: str,
        *,
        source: str = "the store's DSN",
        clock: Callable[[], float] | None = None,
        max_connections: int = 8,
        connect_timeout: float = 10.0,
    ) -> None:
        if not isinstance(workspace_id, str) or not workspace_id:
            raise StoreError(f"a workspace id must be a non-empty string, got {workspace_id!r}")
        self._dsn, self._id, self._source = dsn, workspace_id, source
        self._clock = clock
        self._timeout = connect_timeout
        self._max = max(1, max_connections)
        self._pool_made: AsyncConnectionPool | None = None

    @property
    def workspace_id(self) -> str:
        """The agent id this store's rows carry."""
        return self._id

    async def open(self) -> None:
        """Connect once (a clear error naming the setting when that fails), migrate the
        schema, then open the pool."""
        where = f"the PostgreSQL store set by {self._source} ({redact(self._dsn)})"
        try:
            connection = await psycopg.AsyncConnection.connect(
                self._dsn, autocommit=True, connect_timeout=max(1, int(self._timeout))
            )
        except psycopg.Error as error:
            raise StoreError(f"cannot connect to {where}: {error}".rstrip()) from error
        async with connection:
            await migrate(connection, where)
        if self._pool_made is None:
            self._pool_made = AsyncConnectionPool(
                self._dsn,
                min_size=1,
                max_size=self._max,
                open=False,
                timeout=self._timeout,
                kwargs={"autocommit": True},
                # A restart (a failover) ends every connection: an empty query first.
                check=AsyncConnectionPool.check_connection,
            )
            await self._pool_made.open(wait=True, timeout=self._timeout)

    @property
    def is_open(self) -> bool:
        """Whether the pool is open (after :meth:`open`, until :meth:`close`)."""
        return self._pool_made is not None

    async def close(self) -> None:
        """Close the pool."""
        if self._pool_made is not None:
            await self._pool_made.close()
            self._pool_made = None

    @property
    def _pool(self) -> AsyncConnectionPool:
        if self._pool_made is None:
            raise StoreError("the PostgreSQL store is not open: await store.open() first")
        return self._pool_made

    def _args(self, **values: Any) -> dict[str, Any]:
        """Query parameters: the workspace, the clock's time (None: the database's), ``values``."""
        now = self._clock() if self._clock is not None else None
        return {"ws": self._id, "now": now, **values}

    async def _fetch(self, query: Any, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        try:
            async with self._pool.connection() as connection:
                cursor = await connection.execute(query, params)
                return await cursor.fetchall() if cursor.description else []
        except psycopg.Error as error:
            raise StoreError(f"the PostgreSQL store failed: {error}") from error
