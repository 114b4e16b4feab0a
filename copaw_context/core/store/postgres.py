"""``PostgresStore``: the workspace store in one PostgreSQL database that replicas share.

Needs the ``postgres`` extra (``pip install 'copaw-context[postgres]'``: psycopg 3 and its
pool); the rest of the package imports without it. Chosen by ``COPAW_CONTEXT_STORE`` or
``running.light_context_config.store.dsn`` (:mod:`.select`). The schema is the package's
(:mod:`.postgres_schema`), migrated when the store opens.

- Streams: rows ``(workspace, stream, seq)``; an append locks each stream's counter row
  (in key order: no deadlock), skips the keys the stream holds and writes the rest, all in
  one transaction; a unique index on the key is the backstop of exactly-once.
- Blobs: the bytes and the offsets of their newlines, so a line range is one ``substring``
  of uncompressed storage.
- Documents: a version column; a put is an ``UPDATE ... WHERE version = expected``.
- Leases (:mod:`.postgres_leases`): a row with its token, expiry and holder, and a
  session-level advisory lock held on a connection of the lease's own (not the pool's,
  which would carry the lock to its next user) until the release. A holder that dies
  (SIGKILL, a lost connection) frees the lease at once; one that hangs past its time is
  ended by the next taker (``pg_terminate_backend``). Times are the database's clock unless
  a clock is given.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import PurePosixPath
from typing import Any

import psycopg

from copaw_context.core.store.lines import (
    check_key,
    check_range,
    encode_text,
    new_blob_key,
    newline_offsets,
    search_tokens,
)
from copaw_context.core.store.postgres_leases import PostgresLeases
from copaw_context.core.store.postgres_pool import NOW_SQL
from copaw_context.core.store.protocol import (
    AppendResult,
    BlobInfo,
    BlobLines,
    Document,
    SearchHit,
    StoreError,
    StreamEntry,
    StreamRecord,
    VersionConflictError,
)

__all__ = ["PostgresStore"]


class PostgresStore(PostgresLeases):
    """The :class:`~copaw_context.core.store.protocol.WorkspaceStore` of one workspace in
    PostgreSQL. ``await store.open()`` before use (``open_store`` does it)."""

    # ------------------------------------------------------------------ streams
    async def append(self, records: Sequence[StreamRecord]) -> AppendResult:
        """One transaction: counters locked in key order, known keys skipped."""
        for record in records:
            check_key(record.stream, "stream")
            if b"\n" in record.data:
                raise StoreError(f"a record of {record.stream!r} is not a single line")
        if not records:
            return AppendResult(0)
        by_stream: dict[str, list[StreamRecord]] = {}
        for record in records:
            by_stream.setdefault(record.stream, []).append(record)
        appended, skipped, committing = 0, [], False
        try:
            async with self._pool.connection() as connection, connection.transaction():
                for stream in sorted(by_stream):
                    count, known = await self._append_one(connection, stream, by_stream[stream])
                    appended += count
                    skipped.extend(known)
                committing = True
        except psycopg.Error as error:
            raise StoreError(f"cannot append: {error}; {_append_outcome(committing)}") from error
        return AppendResult(appended, tuple(skipped))

    async def _append_one(
        self, connection: Any, stream: str, batch: list[StreamRecord]
    ) -> tuple[int, list[str]]:
        ids = {"ws": self._id, "stream": stream}
        await connection.execute(
            "INSERT INTO copaw_streams VALUES (%(ws)s, %(stream)s, 0) ON CONFLICT DO NOTHING", ids
        )
        cursor = await connection.execute(
            "SELECT next_seq FROM copaw_streams WHERE workspace = %(ws)s AND stream = %(stream)s"
            " FOR UPDATE",
            ids,
        )
        row = await cursor.fetchone()
        seq = int(row[0])
        keys = [record.key for record in batch if record.key is not None]
        known: set[str] = set()
        if keys:
            cursor = await connection.execute(
                "SELECT key FROM copaw_records WHERE workspace = %(ws)s AND stream = %(stream)s"
                " AND key = ANY(%(keys)s::text[])",
                {**ids, "keys": keys},
            )
            known = {found for (found,) in await cursor.fetchall()}
        skipped: list[str] = []
        rows: list[tuple[Any, ...]] = []
        for record in batch:
            if record.key is not None:
                if record.key in known:
                    skipped.append(record.key)
                    continue
                known.add(record.key)
            tokens = sorted(search_tokens(record.data.decode("utf-8", errors="replace")))
            rows.append((self._id, stream, seq + len(rows), record.key, record.data, tokens))
        if rows:
            async with connection.cursor() as insert:
                await insert.executemany(
                    "INSERT INTO copaw_records VALUES (%s, %s, %s, %s, %s, %s)", rows
                )
            await connection.execute(
                "UPDATE copaw_streams SET next_seq = %(next)s"
                " WHERE workspace = %(ws)s AND stream = %(stream)s",
                {**ids, "next": seq + len(rows)},
            )
        return len(rows), skipped

    async def read(self, stream: str, start: int = 0) -> list[StreamEntry]:
        """The stream's rows from ``start`` on, by position."""
        rows = await self._fetch(
            "SELECT seq, key, data FROM copaw_records WHERE workspace = %(ws)s"
            " AND stream = %(stream)s AND seq >= %(start)s ORDER BY seq",
            {"ws": self._id, "stream": check_key(stream, "stream"), "start": start},
        )
        return [StreamEntry(int(seq), key, bytes(data)) for seq, key, data in rows]

    async def streams(self, prefix: str) -> list[str]:
        """The streams with records whose key starts with ``prefix``."""
        rows = await self._fetch(
            "SELECT stream FROM copaw_streams WHERE workspace = %(ws)s AND next_seq > 0"
            ' AND starts_with(stream, %(prefix)s) ORDER BY stream COLLATE "C"',
            {"ws": self._id, "prefix": prefix},
        )
        return [stream for (stream,) in rows]

    async def stream_lengths(self, prefix: str) -> dict[str, int]:
        """The streams' counters (one query)."""
        rows = await self._fetch(
            "SELECT stream, next_seq FROM copaw_streams WHERE workspace = %(ws)s AND next_seq > 0"
            " AND starts_with(stream, %(prefix)s)",
            {"ws": self._id, "prefix": prefix},
        )
        return {stream: int(count) for stream, count in rows}

    # ------------------------------------------------------------------ blobs
    async def put_blob(self, folder: str, parts: Sequence[str], separator: str = "\n") -> BlobInfo:
        """One row: the bytes, their newline offsets, the stamp."""
        key = new_blob_key(folder)
        data = encode_text(parts, separator)
        offsets = newline_offsets(data)
        rows = await self._fetch(
            "INSERT INTO copaw_blobs"
            f" VALUES (%(ws)s, %(key)s, %(data)s, %(nl)s::bigint[], {NOW_SQL})"
            " RETURNING stamp",
            self._args(key=key, data=data, nl=offsets),
        )
        return BlobInfo(key, len(offsets) + 1, len(data), float(rows[0][0]))

    async def restore_blob(self, key: str, data: bytes) -> BlobInfo:
        """Save ``data`` as blob ``key`` (a file of an exported workspace brought back:
        ``copaw-context store import``); a blob already there is a :class:`StoreError`."""
        offsets = newline_offsets(data)
        rows = await self._fetch(
            "INSERT INTO copaw_blobs"
            f" VALUES (%(ws)s, %(key)s, %(data)s, %(nl)s::bigint[], {NOW_SQL})"
            " RETURNING stamp",
            self._args(key=check_key(key), data=data, nl=offsets),
        )
        return BlobInfo(key, len(offsets) + 1, len(data), float(rows[0][0]))

    async def read_lines(self, key: str, first: int = 1, last: int | None = None) -> BlobLines:
        """The byte span of the lines, cut by the database."""
        check_range(first, last)
        rows = await self._fetch(
            "SELECT cardinality(newlines),"
            " substring(data FROM (span.a + 1)::int FOR (span.b - span.a)::int)"
            " FROM copaw_blobs, LATERAL (SELECT"
            "  CASE WHEN %(first)s::int = 1 THEN 0"
            "   ELSE COALESCE(newlines[%(first)s::int - 1] + 1, octet_length(data)) END AS a,"
            "  COALESCE(newlines[%(last)s::int] + 1, octet_length(data)) AS b) AS span"
            " WHERE workspace = %(ws)s AND key = %(key)s",
            {"ws": self._id, "key": check_key(key), "first": first, "last": last},
        )
        if not rows:
            raise StoreError(f"no blob {key} in the store of workspace {self._id}")
        newlines, data = rows[0]
        return BlobLines(bytes(data), int(newlines) + 1)

    async def blob_info(self, key: str) -> BlobInfo | None:
        """Its row's figures (``None`` when there is none)."""
        rows = await self._fetch(
            "SELECT key, cardinality(newlines) + 1, octet_length(data), stamp FROM copaw_blobs"
            " WHERE workspace = %(ws)s AND key = %(key)s",
            {"ws": self._id, "key": check_key(key)},
        )
        return _blob(rows[0]) if rows else None

    async def list_blobs(self, folder: str) -> list[BlobInfo]:
        """The blobs directly in ``folder``."""
        rows = await self._fetch(
            "SELECT key, cardinality(newlines) + 1, octet_length(data), stamp FROM copaw_blobs"
            " WHERE workspace = %(ws)s AND starts_with(key, %(prefix)s)"
            " AND strpos(substr(key, %(cut)s), '/') = 0 ORDER BY key COLLATE \"C\"",
            {"ws": self._id, "prefix": f"{check_key(folder)}/", "cut": len(folder) + 2},
        )
        return [_blob(row) for row in rows]

    async def expire_blobs(
        self, folder: str, max_age_seconds: float, referenced: Collection[str] = ()
    ) -> list[str]:
        """Referenced blobs get a fresh stamp; the others past their age are deleted."""
        names = {PurePosixPath(str(item)).name for item in referenced}
        kept = [f"{check_key(folder)}/{name}" for name in sorted(names)]
        age = max(0.0, float(max_age_seconds))
        params = self._args(prefix=f"{folder}/", cut=len(folder) + 2, kept=kept, age=age)
        try:
            async with self._pool.connection() as connection, connection.transaction():
                await connection.execute(
                    f"UPDATE copaw_blobs SET stamp = {NOW_SQL}"
                    " WHERE workspace = %(ws)s AND key = ANY(%(kept)s::text[])",
                    params,
                )
                cursor = await connection.execute(
                    "DELETE FROM copaw_blobs WHERE workspace = %(ws)s"
                    " AND starts_with(key, %(prefix)s) AND strpos(substr(key, %(cut)s), '/') = 0"
                    " AND NOT (key = ANY(%(kept)s::text[]))"
                    f" AND {NOW_SQL} - stamp > %(age)s RETURNING key",
                    params,
                )
                removed = sorted(key for (key,) in await cursor.fetchall())
        except psycopg.Error as error:
            raise StoreError(f"cannot expire blobs of {folder}: {error}") from error
        return removed

    # ------------------------------------------------------------------ documents
    async def get_document(self, key: str) -> Document:
        """Its row (``Document(key, None, "")`` when there is none)."""
        rows = await self._fetch(
            "SELECT data, version FROM copaw_documents WHERE workspace = %(ws)s AND key = %(key)s",
            {"ws": self._id, "key": check_key(key)},
        )
        if not rows:
            return Document(key, None, "")
        return Document(key, bytes(rows[0][0]), str(rows[0][1]))

    async def put_document(self, key: str, data: bytes, expected_version: str) -> Document:
        """Insert when ``""`` is expected, else update where the version still matches."""
        params = {"ws": self._id, "key": check_key(key), "data": data}
        if expected_version == "":
            rows = await self._put_row(
                "INSERT INTO copaw_documents VALUES (%(ws)s, %(key)s, %(data)s, 1)"
                " ON CONFLICT DO NOTHING RETURNING version",
                params,
            )
        elif _is_version(expected_version):
            rows = await self._put_row(
                "UPDATE copaw_documents SET data = %(data)s, version = version + 1"
                " WHERE workspace = %(ws)s AND key = %(key)s AND version = %(expected)s"
                " RETURNING version",
                {**params, "expected": int(expected_version)},
            )
        else:
            rows = []
        if not rows:
            current = await self.get_document(key)
            raise VersionConflictError(key, expected_version, current.version)
        return Document(key, data, str(rows[0][0]))

    async def _put_row(self, query: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        """Run a document write; when it fails without a reply (the write may have been
        committed), the document is read again. Holding ``data``, it was written (the
        version is the one holding those bytes, maybe a later writer's put of the same
        bytes); still at the expected version, it is unchanged; one version on with other
        bytes, another writer won (a conflict: this write would have made that version);
        further on, whether this write landed first is unknown. A store not open sent
        nothing: its own error."""
        self._pool  # noqa: B018 -- raises when the store is not open
        key, expected = params["key"], int(params.get("expected", 0))
        try:
            return await self._fetch(query, params)
        except StoreError as error:
            try:
                current = await self.get_document(key)
            except StoreError:
                raise StoreError(
                    f"{error}; whether {key} was written is unknown (the store cannot be read "
                    "either): read it again before writing it"
                ) from error
            now = int(current.version or 0)
            if current.data == params["data"] and current.version:
                return [(now,)]
            if now == expected:
                raise StoreError(f"{error}; {key} is unchanged") from error
            if now == expected + 1:
                raise VersionConflictError(key, str(expected or ""), current.version) from error
            raise StoreError(
                f"{error}; {key} has since been written by other writers (version {now}), so "
                "whether this write landed before them is unknown: read it again before "
                "writing it"
            ) from error

    # ------------------------------------------------------------------ search
    async def search(self, query: str, prefix: str, limit: int = 20) -> list[SearchHit]:
        """Rows holding every token of ``query`` (the GIN index), by stream and position."""
        tokens = sorted(search_tokens(query))
        if not tokens or limit <= 0:
            return []
        rows = await self._fetch(
            "SELECT stream, seq, data FROM copaw_records WHERE workspace = %(ws)s"
            " AND starts_with(stream, %(prefix)s) AND tokens @> %(tokens)s::text[]"
            ' ORDER BY stream COLLATE "C", seq LIMIT %(limit)s',
            {"ws": self._id, "prefix": prefix, "tokens": tokens, "limit": limit},
        )
        return [SearchHit(stream, int(seq), bytes(data)) for stream, seq, data in rows]

    async def sync(self) -> None:
        """Nothing to wait for: every write is committed when it returns."""


def _is_version(text: str) -> bool:
    """A version this store gives (ASCII digits within ``bigint``): other text never
    matches one (``"٣"`` is not 3, ``"²"`` no number)."""
    return text.isascii() and text.isdigit() and int(text) < 2**63


def _blob(row: tuple[Any, ...]) -> BlobInfo:
    key, lines, nbytes, stamp = row
    return BlobInfo(str(key), int(lines), int(nbytes), float(stamp))


def _append_outcome(committing: bool) -> str:
    """What a failed append left: nothing before its commit; unknown at the commit (the
    reply was lost), when appending again is safe for keyed records (they land once)."""
    if not committing:
        return "nothing was written"
    return (
        "the commit's reply was lost, so the records may have been written: append them "
        "again (a record with a key lands once)"
    )
