"""Recall: a full-text index over MEMORY.md, the daily logs and the dialog archive.

The index is an SQLite database in the workspace (``<memory_dir>/.index.sqlite3``) with an
FTS5 table using the ``trigram`` tokenizer, so Chinese (no spaces between words) is found as
well as English. When the running SQLite lacks FTS5 or the trigram tokenizer, a plain table
scanned with ``LIKE`` is used instead (a warning is logged once).

Indexing is incremental: for each file the index remembers size, modification time, inode and
how many bytes it indexed. Appended archive lines are read from where the last run stopped;
a Markdown file that changed is indexed again whole; a file that shrank, was replaced or
vanished is dropped first. A missing index is created and a corrupt one is moved aside and
rebuilt. Several processes may index and search at once: the database is in WAL mode, waits
for a busy writer, and each file is indexed in its own write transaction that re-reads what
is already indexed, so no line is indexed twice.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .._confine import OutsideWorkspaceError, check_inside
from .._safe_open import ReadFailure, open_inside
from ._extract import Chunk, markdown_chunks, message_chunks, query_terms, snippet
from ._index_db import (
    INDEX_FILE,
    REBUILD_REQUESTED,
    IndexDatabase,
    MemoryIndexError,
    NeedsRebuild,
    fts5_trigram_available,
)
from ._index_files import complete_lines, tail_hash, up_to_date
from .files import LEGACY_MEMORY_FILE, MEMORY_FILE

__all__ = [
    "INDEX_FILE",
    "IndexStats",
    "MemoryIndex",
    "MemoryIndexError",
    "SearchHit",
    "fts5_trigram_available",
]

logger = logging.getLogger("copaw_context")

_ROW_QUERY = (
    "SELECT size, mtime_ns, inode, indexed_bytes, indexed_lines, tail FROM files WHERE path = ?"
)
_LIKE_SPECIAL = re.compile(r"([\\%_])")
_PROCESS_LOCKS: dict[str, threading.Lock] = {}
_PROCESS_LOCKS_GUARD = threading.Lock()

Kind = Literal["memory", "log", "dialog"]


@dataclass(frozen=True)
class SearchHit:
    """One result: the file (relative to the workspace), the 1-based line and a snippet."""

    path: str
    line: int
    kind: Kind
    snippet: str
    label: str = ""
    stamp: str = ""


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
    ) -> None:
        self._workspace = Path(workspace).expanduser().absolute()
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
        return await asyncio.to_thread(self.refresh_sync)

    async def search(self, query: str, limit: int = 5, *, refresh: bool = True) -> list[SearchHit]:
        """The best ``limit`` hits for ``query`` (words must all occur; if no chunk has all of
        them, chunks with any). Refreshes the index first unless ``refresh`` is False."""
        return await asyncio.to_thread(self.search_sync, query, limit, refresh)

    async def rebuild(self) -> IndexStats:
        """Drop the index and index every file again."""
        return await asyncio.to_thread(self.rebuild_sync)

    def refresh_sync(self) -> IndexStats:
        """:meth:`refresh`, blocking."""
        with self._process_lock:
            try:
                return self._refresh()
            except NeedsRebuild as reason:
                return self._rebuild(str(reason))

    def rebuild_sync(self) -> IndexStats:
        """:meth:`rebuild`, blocking."""
        with self._process_lock:
            return self._rebuild(REBUILD_REQUESTED)

    def _rebuild(self, reason: str) -> IndexStats:
        self._db.recreate(reason)
        try:
            stats = self._refresh()
        except NeedsRebuild as again:
            raise MemoryIndexError(f"the memory index {self._path} is unusable: {again}") from None
        return IndexStats(stats.files_indexed, stats.chunks_added, stats.files_dropped, True)

    def search_sync(self, query: str, limit: int = 5, refresh: bool = True) -> list[SearchHit]:
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
                    hits = self._query(conn, terms, limit, every=True)
                    if not hits and len(terms) > 1:
                        hits = self._query(conn, terms, limit, every=False)
                    return hits
            except NeedsRebuild as reason:
                if attempt:
                    raise MemoryIndexError(
                        f"the memory index {self._path} is unusable: {reason}"
                    ) from None
                with self._process_lock:
                    self._rebuild(str(reason))
        return []

    # --- indexing --------------------------------------------------------------------------

    def _sources(self) -> dict[str, tuple[Path, Kind]]:
        found: dict[str, tuple[Path, Kind]] = {}
        for name in (MEMORY_FILE, LEGACY_MEMORY_FILE):
            path = self._workspace / name
            if path.is_file() and not any(p.samefile(path) for p, _ in found.values()):
                found[name] = (path, "memory")
        folders: tuple[tuple[Path, str, Kind], ...] = (
            (self._memory_dir, "*.md", "log"),
            (self._dialog_dir, "*.jsonl", "dialog"),
        )
        for directory, pattern, kind in folders:
            if directory.is_dir():
                for path in sorted(directory.glob(pattern)):
                    if path.is_file():
                        found[path.relative_to(self._workspace).as_posix()] = (path, kind)
        return {rel: source for rel, source in found.items() if self._readable(source[0])}

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
            known = {row[0] for row in conn.execute("SELECT path FROM files")}
            for rel in sorted(known - set(sources)):
                conn.execute("BEGIN IMMEDIATE")
                self._drop(conn, rel)
                conn.execute("COMMIT")
                dropped += 1
            for rel, (path, kind) in sources.items():
                added = self._index_file(conn, rel, path, kind)
                if added is not None:
                    files, chunks = files + 1, chunks + added
        return IndexStats(files, chunks, dropped)

    def _drop(self, conn: sqlite3.Connection, rel: str) -> None:
        conn.execute(
            "DELETE FROM chunk_text WHERE rowid IN (SELECT id FROM chunks WHERE path = ?)", (rel,)
        )
        conn.execute("DELETE FROM chunks WHERE path = ?", (rel,))
        conn.execute("DELETE FROM files WHERE path = ?", (rel,))

    def _index_file(self, conn: sqlite3.Connection, rel: str, path: Path, kind: Kind) -> int | None:
        """Index what is new in one file; None when it was up to date.

        Each step is its own write transaction that first re-reads what is indexed (another
        process may have done it); an archive is read in steps of a few MB, so a huge
        one neither fills the memory nor holds the write lock for long.
        """
        try:
            info = path.stat()
        except FileNotFoundError:
            return None
        row = conn.execute(_ROW_QUERY, (rel,)).fetchone()
        if row is not None and up_to_date(row, info):
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
            if row is not None and up_to_date(row, info):
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
                data = handle.read()
                text = data.decode("utf-8", "replace")
                new_chunks = markdown_chunks(text, 1, self._max_chunk_chars)
                counted = data.count(b"\n")
            indexed = start + len(data)
            tail = tail_hash(handle, indexed)
        if row is not None and not data and start > 0:
            return None  # only a torn last line is new: it waits until it is complete
        for chunk in new_chunks:
            cursor = conn.execute(
                "INSERT INTO chunks (path, line, kind, stamp) VALUES (?, ?, ?, ?)",
                (rel, chunk.line, kind, chunk.stamp),
            )
            conn.execute(
                "INSERT INTO chunk_text (rowid, body, label) VALUES (?, ?, ?)",
                (cursor.lastrowid, chunk.body, chunk.label),
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

    # --- querying --------------------------------------------------------------------------

    def _query(
        self, conn: sqlite3.Connection, terms: list[str], limit: int, *, every: bool
    ) -> list[SearchHit]:
        long_terms = [t for t in terms if len(t) >= 3] if self._use_fts else []
        if not every and len(long_terms) < len(terms):
            long_terms = []  # FTS5 cannot OR a MATCH with other conditions: scan instead
        like_terms = [t for t in terms if t not in long_terms]
        clauses: list[str] = []
        params: list[object] = []
        if long_terms:
            quoted = ['"' + t.replace('"', '""') + '"' for t in long_terms]
            clauses.append("chunk_text MATCH ?")
            params.append((" AND " if every else " OR ").join(quoted))
        for term in like_terms:
            clauses.append(
                "(chunk_text.body LIKE ? ESCAPE '\\' OR chunk_text.label LIKE ? ESCAPE '\\')"
            )
            pattern = "%" + _LIKE_SPECIAL.sub(r"\\\1", term) + "%"
            params += [pattern, pattern]
        where = (" AND " if every else " OR ").join(clauses)
        order = "chunk_text.rank, chunks.id DESC" if long_terms else "chunks.id DESC"
        sql = (
            "SELECT chunks.path, chunks.line, chunks.kind, chunks.stamp, chunk_text.body, "
            "chunk_text.label FROM chunk_text JOIN chunks ON chunks.id = chunk_text.rowid "
            f"WHERE {where} ORDER BY {order} LIMIT ?"
        )
        rows = conn.execute(sql, (*params, limit * 4)).fetchall()
        hits: list[SearchHit] = []
        seen: set[tuple[str, int]] = set()
        for path, line, kind, stamp, body, label in rows:
            if (path, line) in seen:
                continue  # several chunks of one long message: one hit
            seen.add((path, line))
            text = snippet(body, terms)
            hits.append(SearchHit(path, int(line), kind, text, label or "", stamp or ""))
            if len(hits) == limit:
                break
        return hits
