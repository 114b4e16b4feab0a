"""The SQLite side of the recall index: opening, schema, and rebuilding a broken database.

Private to :mod:`copaw_context.core.memory`. Tables: ``meta`` (the text-table mode),
``files`` (per source file: size, mtime, inode, bytes and lines indexed, a hash of the last
indexed bytes), ``chunks`` (path, 1-based line, kind, timestamp, session) and ``chunk_text``
(body and label; FTS5 with the trigram tokenizer, or a plain table for the ``LIKE``
fallback), whose rowid is the chunk id; with FTS5 also ``chunk_words`` (contentless FTS5,
``porter unicode61``: the words of body and label, Chinese in two-character pieces, see
:mod:`._words`), what questions are ranked by. ``PRAGMA user_version`` is the schema version.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from copaw_context.core.errors import CopawContextError
from copaw_context.core.memory._io import locked
from copaw_context.core.memory._words import TOKENIZER
from copaw_context.core.workspace.confine import check_inside
from copaw_context.core.workspace.confine_write import name_at, writable_dir

__all__ = [
    "INDEX_FILE",
    "WORDS_TABLE",
    "REBUILD_REQUESTED",
    "IndexDatabase",
    "MemoryIndexError",
    "NeedsRebuild",
    "OutdatedIndex",
    "fts5_trigram_available",
]

logger = logging.getLogger("copaw_context")

INDEX_FILE = ".index.sqlite3"
REBUILD_REQUESTED = "rebuild requested"
_SCHEMA_VERSION = 2
_CORRUPT_CODES = frozenset({11, 26})  # SQLITE_CORRUPT, SQLITE_NOTADB
_BROKEN_MARKERS = (
    "malformed",
    "not a database",
    "no such table",
    "no such module",
    "no such column",
)
_TRIGRAM: bool | None = None
WORDS_TABLE = (
    f"CREATE VIRTUAL TABLE chunk_words USING fts5(words, content='', tokenize='{TOKENIZER}')"
)
"""The ranked words table (contentless: a row is deleted by giving its words again)."""


def fts5_trigram_available() -> bool:
    """Whether this Python's SQLite has FTS5 with the trigram tokenizer (checked once)."""
    global _TRIGRAM
    if _TRIGRAM is None:
        try:
            with closing(sqlite3.connect(":memory:")) as probe:
                probe.execute("CREATE VIRTUAL TABLE probe USING fts5(x, tokenize='trigram')")
            _TRIGRAM = True
        except sqlite3.Error as error:
            logger.warning(
                "memory search: SQLite %s has no FTS5 trigram tokenizer (%s); falling back to a "
                "plain LIKE scan, which is slower on large archives",
                sqlite3.sqlite_version,
                error,
            )
            _TRIGRAM = False
    return _TRIGRAM


class MemoryIndexError(CopawContextError):
    """The recall index cannot be used, even after a rebuild."""


class NeedsRebuild(Exception):
    """The index must be recreated (corrupt, foreign schema, or built without FTS5 support)."""


class OutdatedIndex(NeedsRebuild):
    """The index is sound but of another schema or mode (another release built it): it is
    rebuilt from the files it indexes, nothing to keep."""


def _is_broken(error: sqlite3.Error) -> bool:
    code = getattr(error, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF in _CORRUPT_CODES:
        return True
    text = str(error).lower()
    return any(marker in text for marker in _BROKEN_MARKERS)


class IndexDatabase:
    """Connections to one index file, creating its schema and rebuilding it when broken."""

    def __init__(
        self, path: Path, *, use_fts: bool, busy_timeout: float, workspace: Path | None = None
    ) -> None:
        self.path = path
        self.workspace = workspace
        self.use_fts = use_fts
        self._busy_timeout = busy_timeout

    @contextmanager
    def connect(self) -> Iterator[sqlite3.Connection]:
        """An autocommit connection with the schema in place; :class:`NeedsRebuild` when the
        file is corrupt, foreign or of another mode. Busy errors are raised as they are."""
        with writable_dir(self.path.parent, self.workspace) as dir_fd:
            if self.workspace is not None:
                check_inside(self.path, self.workspace, write=True)
            # Through the open folder: a folder swapped for a link is not followed.
            target = name_at(dir_fd, self.path)
            try:
                conn = sqlite3.connect(target, timeout=self._busy_timeout, isolation_level=None)
            except sqlite3.Error as error:
                raise NeedsRebuild(f"cannot open: {error}") from error
            yield from self._use(conn)

    def _use(self, conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
        try:
            try:
                conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000)}")
                self._ensure_schema(conn)
            except sqlite3.Error as error:
                if isinstance(error, sqlite3.OperationalError) and not _is_broken(error):
                    raise
                raise NeedsRebuild(str(error)) from error
            try:
                yield conn
            except sqlite3.Error as error:
                if _is_broken(error):
                    raise NeedsRebuild(str(error)) from error
                raise
        finally:
            conn.close()

    def _ensure_schema(self, conn: sqlite3.Connection) -> None:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        mode = "fts5" if self.use_fts else "plain"
        if version == _SCHEMA_VERSION:
            row = conn.execute("SELECT value FROM meta WHERE key = 'mode'").fetchone()
            if row is None or row[0] != mode:
                raise OutdatedIndex(
                    f"it was built in {row[0] if row else 'no'} mode, this one searches in {mode}"
                )
            return
        if version != 0:
            made_by = "an earlier" if version < _SCHEMA_VERSION else "a later"
            raise OutdatedIndex(
                f"{made_by} release built it (schema {version}; this release uses "
                f"{_SCHEMA_VERSION})"
            )
        if conn.execute("PRAGMA journal_mode = WAL").fetchone()[0].lower() != "wal":
            logger.debug("memory index: WAL mode not available for %s", self.path)
        conn.execute("BEGIN IMMEDIATE")
        try:
            if conn.execute("PRAGMA user_version").fetchone()[0] == 0:
                text_table = (
                    "CREATE VIRTUAL TABLE chunk_text USING fts5(body, label, tokenize='trigram')"
                    if self.use_fts
                    else "CREATE TABLE chunk_text (rowid INTEGER PRIMARY KEY, body, label)"
                )
                conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
                conn.execute("INSERT INTO meta VALUES ('mode', ?)", (mode,))
                conn.execute(
                    "CREATE TABLE files (path TEXT PRIMARY KEY, kind TEXT, size INTEGER, "
                    "mtime_ns INTEGER, inode INTEGER, indexed_bytes INTEGER, "
                    "indexed_lines INTEGER, tail TEXT)"
                )
                conn.execute(
                    "CREATE TABLE chunks (id INTEGER PRIMARY KEY, path TEXT, line INTEGER, "
                    "kind TEXT, stamp TEXT, session TEXT)"
                )
                conn.execute("CREATE INDEX chunks_path ON chunks (path)")
                conn.execute(text_table)
                if self.use_fts:
                    conn.execute(WORDS_TABLE)
                conn.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def recreate(self, reason: str, *, outdated: bool = False) -> None:
        """Start a new, empty index; a broken one is kept once as ``.index.sqlite3.corrupt``
        (an ``outdated`` one, sound but of another release's schema, is not: it is derived).

        Unless a rebuild was asked for, an index that another process already rebuilt (it
        passes ``PRAGMA quick_check``) is kept.
        """
        with locked(self.path.parent / ".locks" / "index.lock", self._busy_timeout, self.workspace):
            if reason != REBUILD_REQUESTED:
                try:
                    with self.connect() as conn:
                        if conn.execute("PRAGMA quick_check").fetchone()[0] == "ok":
                            return
                except (NeedsRebuild, sqlite3.Error):
                    pass
                if outdated:
                    logger.info(
                        "memory index %s: %s; rebuilding it from the archive and memory files "
                        "(once: this search waits for it)",
                        self.path,
                        reason,
                    )
                else:
                    logger.warning(
                        "memory index %s is broken, rebuilding it: %s", self.path, reason
                    )
            with writable_dir(self.path.parent, self.workspace) as dir_fd:  # never via a link
                name = self.path.name
                with contextlib.suppress(FileNotFoundError):
                    if reason == REBUILD_REQUESTED or outdated:
                        os.unlink(name, dir_fd=dir_fd)
                    else:
                        corrupt = INDEX_FILE + ".corrupt"
                        os.replace(name, corrupt, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
                for suffix in ("-wal", "-shm"):  # never let an old log meet the new database
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(name + suffix, dir_fd=dir_fd)
