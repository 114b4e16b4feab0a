"""Recall: a full-text index over everything that left the context: MEMORY.md, the daily logs,
the dialog archive, the summaries ``/clear`` and ``/new`` removed, and the saved full texts of
cut tool outputs and user requests (the first ``max_output_bytes`` of each; see
:mod:`._sources`).

The index is an SQLite database in the workspace (``<memory_dir>/.index.sqlite3``) with an
FTS5 table using the ``trigram`` tokenizer, so Chinese (no spaces between words) is found as
well as English. When the running SQLite lacks FTS5 or the trigram tokenizer, a plain table
scanned with ``LIKE`` is used instead (a warning is logged once).

Indexing is incremental: for each file the index remembers size, modification time, inode and
how many bytes it indexed. Appended archive lines are read from where the last run stopped;
a Markdown file that changed is indexed again whole; a file that shrank, was replaced or
vanished is dropped first (an expired tool output leaves the index at the next refresh). A
missing index is created and a corrupt one is moved aside and rebuilt. Several processes may
index and search at once: the database is in WAL mode, waits for a busy writer, and each file
is indexed in its own write transaction that re-reads what is already indexed, so no line is
indexed twice.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from copaw_context.core.memory._extract import Chunk, message_chunks, query_terms
from copaw_context.core.memory._index_db import (
    INDEX_FILE,
    REBUILD_REQUESTED,
    IndexDatabase,
    MemoryIndexError,
    NeedsRebuild,
    OutdatedIndex,
    fts5_trigram_available,
)
from copaw_context.core.memory._index_files import complete_lines, tail_hash, up_to_date
from copaw_context.core.memory._index_query import SearchHit, query_hits, question_hits
from copaw_context.core.memory._sources import WHOLE_KINDS, Kind, Source, find_sources, text_of
from copaw_context.core.memory._words import index_words
from copaw_context.core.workspace.confine import OutsideWorkspaceError, check_inside
from copaw_context.core.workspace.safe_open import ReadFailure, open_inside

__all__ = [
    "INDEX_FILE",
    "IndexStats",
    "Kind",
    "MAX_OUTPUT_BYTES",
    "MemoryIndex",
    "MemoryIndexError",
    "SearchHit",
    "fts5_trigram_available",
]

logger = logging.getLogger("copaw_context")

_ROW_QUERY = (
    "SELECT size, mtime_ns, inode, indexed_bytes, indexed_lines, tail FROM files WHERE path = ?"
)
_ALL_ROWS_QUERY = (
    "SELECT path, size, mtime_ns, inode, indexed_bytes, indexed_lines, tail FROM files"
)
_PROCESS_LOCKS: dict[str, threading.Lock] = {}
_PROCESS_LOCKS_GUARD = threading.Lock()

MAX_OUTPUT_BYTES = 65536
"""Bytes of each saved tool output (and cut user request) the index takes in: its beginning."""


def _words_of(kind: str, body: str, label: str) -> str:
    """What ``chunk_words`` indexes for a chunk: its words, and its heading (an archived
    message's label is only its speaker)."""
    return index_words(body if kind == "dialog" or not label else f"{label}\n{body}")


async def _nothing_to_copy() -> None:
    """The default ``MemoryIndex.before_read``: the files are the archive."""


@dataclass(frozen=True)
class IndexStats:
    """What one refresh did."""

    files_indexed: int = 0
    chunks_added: int = 0
    files_dropped: int = 0
    rebuilt: bool = False


class MemoryIndex:
    """The recall index of one workspace."""

    def __init__(
        self,
        workspace: str | Path,
        memory_dir: str = "memory",
        dialog_dir: str = "dialog",
        *,
        busy_timeout: float = 30.0,
        max_chunk_chars: int = 4000,
        max_message_chars: int = 65536,
        use_fts: bool | None = None,
        extra_read_roots: Sequence[str | Path] = (),
        tool_results_dir: str | None = "tool_result",
        max_output_bytes: int = MAX_OUTPUT_BYTES,
    ) -> None:
        self._workspace = Path(workspace).expanduser().absolute()
        self._output_dir = None if tool_results_dir is None else self._workspace / tool_results_dir
        self._max_output_bytes = max(1, max_output_bytes)
        self._extra_read_roots = tuple(Path(r).expanduser().absolute() for r in extra_read_roots)
        self._memory_dir = self._workspace / memory_dir
        self._dialog_dir = self._workspace / dialog_dir
        self._path = self._memory_dir / INDEX_FILE
        self._busy_timeout = busy_timeout
        self._max_chunk_chars = max_chunk_chars
        self._max_message_chars = max_message_chars
        self._use_fts = fts5_trigram_available() if use_fts is None else use_fts
        self._db = IndexDatabase(
            self._path, use_fts=self._use_fts, busy_timeout=busy_timeout, workspace=self._workspace
        )
        with _PROCESS_LOCKS_GUARD:
            self._process_lock = _PROCESS_LOCKS.setdefault(str(self._path), threading.Lock())
        self.before_read: Callable[[], Awaitable[object]] = _nothing_to_copy
        """Awaited before the files are read (a shared archive's copy brought up to date)."""

    @property
    def path(self) -> Path:
        """The index database file."""
        return self._path

    @property
    def uses_fts(self) -> bool:
        """True with FTS5 + trigram, False for the LIKE fallback."""
        return self._use_fts

    # --- public API ------------------------------------------------------------------------

    async def refresh(self) -> IndexStats:
        """Bring the index up to date with the files (off the event loop)."""
        await self.before_read()
        return await asyncio.to_thread(self.refresh_sync)

    async def search(
        self, query: str, limit: int = 5, *, refresh: bool = True, ranked: bool = False
    ) -> list[SearchHit]:
        """The best ``limit`` hits for ``query`` (words must all occur; if no chunk has all of
        them, chunks with any). Refreshes the index first unless ``refresh`` is False.

        With ``ranked`` (what ``memory_search`` asks for), ``query`` may be a question in
        other words than the text it looks for: a query of up to three words gets the chunks
        holding all of them literally when there are any; else the chunks are ranked by its
        words (BM25: stems, Chinese in two-character pieces, function words left out; see
        :mod:`._words`). Without FTS5 the search is literal either way."""
        if refresh:
            await self.before_read()
        return await asyncio.to_thread(self.search_sync, query, limit, refresh, ranked)

    async def rebuild(self) -> IndexStats:
        """Drop the index and index every file again."""
        await self.before_read()
        return await asyncio.to_thread(self.rebuild_sync)

    def refresh_sync(self) -> IndexStats:
        """:meth:`refresh`, blocking."""
        with self._process_lock:
            try:
                return self._refresh()
            except NeedsRebuild as reason:
                return self._rebuild(reason)

    def rebuild_sync(self) -> IndexStats:
        """:meth:`rebuild`, blocking."""
        with self._process_lock:
            return self._rebuild(REBUILD_REQUESTED)

    def _rebuild(self, reason: str | NeedsRebuild) -> IndexStats:
        self._db.recreate(str(reason), outdated=isinstance(reason, OutdatedIndex))
        try:
            stats = self._refresh()
        except NeedsRebuild as again:
            raise MemoryIndexError(f"the memory index {self._path} is unusable: {again}") from None
        return IndexStats(stats.files_indexed, stats.chunks_added, stats.files_dropped, True)

    def search_sync(
        self, query: str, limit: int = 5, refresh: bool = True, ranked: bool = False
    ) -> list[SearchHit]:
        """:meth:`search`, blocking."""
        terms = query_terms(query)
        if not terms:
            raise ValueError("the query is empty; give one or more words to look for")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be a whole number >= 1, got {limit!r}")
        if refresh:
            self.refresh_sync()
        for attempt in (0, 1):
            try:
                with self._db.connect() as conn:
                    if ranked and self._use_fts:
                        return question_hits(conn, query, terms, limit)
                    hits = query_hits(conn, terms, limit, every=True, fts=self._use_fts)
                    if not hits and len(terms) > 1:
                        hits = query_hits(conn, terms, limit, every=False, fts=self._use_fts)
                    return hits
            except NeedsRebuild as reason:
                if attempt:
                    raise MemoryIndexError(
                        f"the memory index {self._path} is unusable: {reason}"
                    ) from None
                with self._process_lock:
                    self._rebuild(reason)
        return []

    # --- indexing --------------------------------------------------------------------------

    def _sources(self) -> dict[str, Source]:
        return find_sources(
            self._workspace, self._memory_dir, self._dialog_dir, self._output_dir, self._readable
        )

    def _readable(self, path: Path) -> bool:
        """Whether ``path`` (symlinks resolved) stays inside the workspace or a read root."""
        try:
            check_inside(path, self._workspace, self._extra_read_roots, write=False)
        except OutsideWorkspaceError as error:
            logger.warning("memory index: skipped %s", error)
            return False
        return True

    def _refresh(self) -> IndexStats:
        files = chunks = dropped = 0
        with self._db.connect() as conn:
            sources = self._sources()
            rows = {row[0]: row[1:] for row in conn.execute(_ALL_ROWS_QUERY)}
            for rel in sorted(set(rows) - set(sources)):
                conn.execute("BEGIN IMMEDIATE")
                self._drop(conn, rel)
                conn.execute("COMMIT")
                dropped += 1
            for rel, (path, kind) in sources.items():
                added = self._index_file(conn, rel, path, kind, rows.get(rel))
                if added is not None:
                    files, chunks = files + 1, chunks + added
        return IndexStats(files, chunks, dropped)

    def _drop(self, conn: sqlite3.Connection, rel: str) -> None:
        if self._use_fts:  # a contentless table forgets a row given the words it indexed
            rows = conn.execute(
                "SELECT chunks.id, chunks.kind, chunk_text.body, chunk_text.label FROM chunks "
                "JOIN chunk_text ON chunk_text.rowid = chunks.id WHERE chunks.path = ?",
                (rel,),
            ).fetchall()
            for rowid, kind, body, label in rows:
                conn.execute(
                    "INSERT INTO chunk_words (chunk_words, rowid, words) VALUES ('delete', ?, ?)",
                    (rowid, _words_of(kind, body, label)),
                )
        conn.execute(
            "DELETE FROM chunk_text WHERE rowid IN (SELECT id FROM chunks WHERE path = ?)", (rel,)
        )
        conn.execute("DELETE FROM chunks WHERE path = ?", (rel,))
        conn.execute("DELETE FROM files WHERE path = ?", (rel,))

    def _index_file(
        self,
        conn: sqlite3.Connection,
        rel: str,
        path: Path,
        kind: Kind,
        row: tuple[Any, ...] | None,
    ) -> int | None:
        """Index what is new in one file (``row``: what the index said of it just before);
        None when it was up to date.

        Each step is its own write transaction that first re-reads what is indexed (another
        process may have done it); an archive is read in steps of a few MB, so a huge
        one neither fills the memory nor holds the write lock for long.
        """
        try:
            info = path.stat()
        except FileNotFoundError:
            return None
        if row is not None and up_to_date(row, info, whole=kind in WHOLE_KINDS):
            return None
        added: int | None = None
        while True:
            conn.execute("BEGIN IMMEDIATE")
            try:
                row = conn.execute(_ROW_QUERY, (rel,)).fetchone()
                step = self._index_step(conn, rel, path, kind, row)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            if step is None:
                return added
            count, more = step
            added = (added or 0) + count
            if not more:
                return added

    def _index_step(
        self,
        conn: sqlite3.Connection,
        rel: str,
        path: Path,
        kind: Kind,
        row: tuple[Any, ...] | None,
    ) -> tuple[int, bool] | None:
        """Index the next part of ``path``: (chunks added, whether more is left), or None when
        there was nothing to do (the write transaction is open)."""
        try:
            roots = [self._workspace.resolve(), *(r.resolve() for r in self._extra_read_roots)]
            handle, _opened = open_inside(path.resolve(), roots)  # no link swapped in
        except (ReadFailure, OSError) as failure:
            logger.warning("memory index: not indexed %s: %s", path, failure)
            return None
        with handle:
            info = os.fstat(handle.fileno())
            if row is not None and up_to_date(row, info, whole=kind in WHOLE_KINDS):
                return None
            start, lines = 0, 0
            appended = (
                kind == "dialog"
                and row is not None
                and row[2] == info.st_ino
                and row[3] <= info.st_size
                and (row[3] == 0 or tail_hash(handle, int(row[3])) == row[5])
            )
            if appended and row is not None:
                start, lines = int(row[3]), int(row[4])
            elif row is not None:
                self._drop(conn, rel)
            handle.seek(start)
            if kind == "dialog":
                data = complete_lines(handle, info.st_size - start)
                new_chunks, counted = self._dialog_chunks(data, lines)
            else:
                read = text_of(handle, kind, self._max_chunk_chars, self._max_output_bytes)
                if read is None:
                    logger.warning("memory index: not indexed %s: it has several hard links", path)
                    return None
                new_chunks, data, counted = read
            # A saved output is done once its beginning is in: all of it counts as indexed.
            indexed = info.st_size if kind in WHOLE_KINDS else start + len(data)
            tail = tail_hash(handle, indexed)
        if row is not None and not data and start > 0:
            return None  # only a torn last line is new: it waits until it is complete
        for chunk in new_chunks:
            cursor = conn.execute(
                "INSERT INTO chunks (path, line, kind, stamp, session) VALUES (?, ?, ?, ?, ?)",
                (rel, chunk.line, kind, chunk.stamp, chunk.session),
            )
            conn.execute(
                "INSERT INTO chunk_text (rowid, body, label) VALUES (?, ?, ?)",
                (cursor.lastrowid, chunk.body, chunk.label),
            )
            if self._use_fts:
                conn.execute(
                    "INSERT INTO chunk_words (rowid, words) VALUES (?, ?)",
                    (cursor.lastrowid, _words_of(kind, chunk.body, chunk.label)),
                )
        state = (info.st_size, info.st_mtime_ns, info.st_ino)
        conn.execute(
            "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (rel, kind, *state, indexed, counted, tail),
        )
        more = kind == "dialog" and bool(data) and indexed < info.st_size
        return len(new_chunks), more

    def _dialog_chunks(self, data: bytes, lines_before: int) -> tuple[list[Chunk], int]:
        found: list[Chunk] = []
        number = lines_before
        for raw in data.split(b"\n")[:-1] if data else []:
            number += 1
            if not raw.strip():
                continue
            try:
                record = json.loads(raw.decode("utf-8", "replace"))
            except ValueError:
                continue  # a torn or foreign line: nothing to index, the numbering goes on
            if isinstance(record, dict):
                found += message_chunks(
                    record, number, self._max_chunk_chars, self._max_message_chars
                )
        return found, number
