"""The PostgreSQL store's tables, created and migrated by the package.

``copaw_schema`` holds the version the database is at; :func:`migrate` runs the steps of
:data:`MIGRATIONS` past it in one transaction, under an advisory lock, so replicas starting
together migrate once. A database newer than this package is refused (its tables may mean
something this code does not know). Every row carries its workspace (the agent id), so one
database serves many agents.

Recall matches on ``tokens`` (:func:`copaw_context.core.store.lines.search_tokens`: words and
CJK bigrams spelled in ASCII) through a GIN index over ``text[]``: no ``pg_trgm`` and no
dependence on the database's locale, which drops CJK characters from trigrams under ``C``.
"""

from __future__ import annotations

from typing import Any

import psycopg

from copaw_context.core.store.protocol import StoreError

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "migrate"]

_LOCK_ID = 0x636F_7061_7763  # "copawc": serialises migrations across replicas

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE copaw_streams (
            workspace text NOT NULL, stream text NOT NULL, next_seq bigint NOT NULL,
            PRIMARY KEY (workspace, stream))""",
        """CREATE TABLE copaw_records (
            workspace text NOT NULL, stream text NOT NULL, seq bigint NOT NULL,
            key text, data bytea NOT NULL, tokens text[] NOT NULL,
            PRIMARY KEY (workspace, stream, seq))""",
        """CREATE UNIQUE INDEX copaw_records_key ON copaw_records (workspace, stream, key)
            WHERE key IS NOT NULL""",
        "CREATE INDEX copaw_records_tokens ON copaw_records USING gin (tokens)",
        """CREATE TABLE copaw_blobs (
            workspace text NOT NULL, key text NOT NULL, data bytea NOT NULL,
            newlines bigint[] NOT NULL, stamp double precision NOT NULL,
            PRIMARY KEY (workspace, key))""",
        # Line-range reads fetch only the slices they need: no compression of the bytes.
        "ALTER TABLE copaw_blobs ALTER COLUMN data SET STORAGE EXTERNAL",
        """CREATE TABLE copaw_documents (
            workspace text NOT NULL, key text NOT NULL, data bytea NOT NULL,
            version bigint NOT NULL, PRIMARY KEY (workspace, key))""",
        """CREATE TABLE copaw_leases (
            workspace text NOT NULL, name text NOT NULL, token text NOT NULL,
            expires_at double precision NOT NULL, PRIMARY KEY (workspace, name))""",
    ),
    # 2: a lease's holder, the backend holding its advisory lock (:mod:`.postgres_leases`);
    # NULL for a row written before (kept to its time limit).
    ("ALTER TABLE copaw_leases ADD COLUMN IF NOT EXISTS holder_pid integer",),
)
"""Step ``i`` takes the database from version ``i`` to ``i + 1``."""

SCHEMA_VERSION = len(MIGRATIONS)


async def migrate(connection: Any, where: str = "the PostgreSQL store") -> int:
    """Bring the schema to :data:`SCHEMA_VERSION` (a ``psycopg.AsyncConnection`` in autocommit
    mode); returns the version it was at. A role that may not create the tables is a
    :class:`StoreError` naming ``where`` and the grant it needs."""
    try:
        return await _migrate(connection)
    except psycopg.Error as error:
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise StoreError(
            f"{where} cannot create or migrate its tables: {first}; connect as a role that may "
            "create tables there (GRANT CREATE ON SCHEMA public TO <role>)"
        ) from error


async def _migrate(connection: Any) -> int:
    async with connection.transaction():
        await connection.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_ID,))
        await connection.execute("CREATE TABLE IF NOT EXISTS copaw_schema (version int NOT NULL)")
        cursor = await connection.execute("SELECT max(version) FROM copaw_schema")
        row = await cursor.fetchone()
        found = int(row[0]) if row is not None and row[0] is not None else 0
        if found > SCHEMA_VERSION:
            raise StoreError(
                f"the database's copaw-context schema is version {found}, newer than this "
                f"package's {SCHEMA_VERSION}; upgrade copaw-context on this replica"
            )
        for step in MIGRATIONS[found:]:
            for statement in step:
                await connection.execute(statement)
        if found < SCHEMA_VERSION:
            await connection.execute("DELETE FROM copaw_schema")
            await connection.execute(
                "INSERT INTO copaw_schema (version) VALUES (%s)", (SCHEMA_VERSION,)
            )
    return found
