"""``WorkspaceStore``: every operation the steps need from a workspace's storage.

One store per workspace, identified by its agent id (agent.json ``id``), not by a local path:
the file store (:mod:`.files`, the default) keeps today's files in the workspace folder, the
PostgreSQL store (:mod:`.postgres`) keeps the same data in one database that several
replicas share. Keys are workspace-relative paths with ``/`` (``dialog/2026-05-01.jsonl``,
``tool_result/<32 hex>.txt``, ``MEMORY.md``): a notice naming a key reads the same on any
replica. All operations are async (they run on the agent's path); none blocks the event loop.

Which step uses each operation, and the file code it stands for today:

- ``append`` (streams): the archive step (``steps/archive.py``: the write-ahead,
  ``FlushPendingArchive``, ``/clear`` and ``/new``) and the daily logs. The file code:
  ``store/file_streams.py`` ``append_files``, the one writer of the day files, which
  ``archive/store.py`` ``DialogArchive.append`` reaches through the file store: a filelock
  per day file, one write and ``fsync``, all or nothing across files, exactly once by
  ``session_id`` + ``archive_id`` (``archive/reader.py`` ``archived_keys``); beyond the
  protocol the file store's ``append`` takes the archive's own choice of the new lines
  (``fresh=``: by key and by part) and returns each file's line count after
  (``FileAppendResult.lengths``). ``memory/files.py`` ``append_log`` for the ``.md`` logs
  (with a shared store; the file store keeps JSONL streams, so without one the logs are
  appended by its ``append_text``, beyond the protocol: ``store/file_documents.py``).
- ``read``, ``streams``: recall's sources, ``/history``, the summary's path guide. The file
  store's listing for the guide is ``FileStore.line_counts`` (beyond the protocol: the day
  files and their line counts, cached per file by ``archive/reader.py``
  ``cached_line_count``), which ``DialogArchive.list_files`` reaches; recall's index
  (``memory/search.py``) reads the files itself, and ``archive/reader.py`` ``read_archive``
  (one file's records) has no caller on the step path.
- ``put_blob``: stage 1's offload (``Pruner.bound_fresh``) and the request cut
  (``dialog/requests/``), through ``toolresults/offload.py`` ``OffloadStore.save_parts``.
  The file code: ``_offload_write.py`` (temp file and rename, the fsync group-committed by
  ``workspace/durable.py``).
- ``read_lines``, ``blob_info``: ``read_file`` following a notice, the compactor's result
  tails (``OffloadStore.read_tails``), the request-cut check (``steps/cut.py``, through
  ``OffloadStore.starts_with``: the saved request starts with the excerpt). The file
  code: ``tools/file_reader.py`` ``read_text_file``; the file store opens the file for it
  (``FileStore.open_blob``, beyond the protocol: a stream, so a read holds only its slice).
- ``expire_blobs``, ``list_blobs``: the ``cleanup`` step (``steps/offload_cleanup.py``),
  through ``OffloadStore.cleanup``. The file code: ``toolresults/_offload_sweep.py`` (names
  the context references and the ``.refs/`` manifests kept, their modification time
  refreshed).
- ``get_document``, ``put_document``: MEMORY.md (the memory tools, consolidation), the
  consolidation record, the offload manifests. The file code: ``store/file_documents.py``
  (MEMORY.md under ``memory/.locks/MEMORY.md.lock``, its dated backup made under that lock
  before the replace, as ``memory/files.py`` ``write_memory_locked`` does; the record
  ``memory/.consolidated.json`` under the consolidation's lease), ``toolresults/offload_refs.py``.
- ``acquire_lease``, ``renew_lease``, ``release_lease``: consolidation (one run at a time),
  the compaction of one session. Today ``consolidate.py`` holds
  ``memory/.locks/consolidate.lock`` for the run (``workspace/locked_io.py``).
- ``search``: ``memory_search``. Today ``memory/search.py`` (SQLite FTS over the files); the
  store's hook is narrower: every token of a query, in stream order.
- ``sync``: what waits for durability (the archive append, the compaction commit, a model
  call's return, ``close``). Today ``workspace/durable.py`` ``flush()`` / ``durable()``.

Without a DSN (the default) stage 1's offload, the request cut and its check, ``read_file``
on a saved result, the compactor's tails, the offload cleanup, the dialog archive's appends
(the write-ahead, ``FlushPendingArchive``, ``/clear``, ``/new``) and its listing (the day
files and the line counts the summary cites) reach their files through the step context's
file store (``StepContext.workspace_store``, a :class:`~.files.FileStore`: ``put_blob``,
``open_blob``, ``expire_blobs``, ``append``, ``line_counts``), and so do MEMORY.md (the
memory tools, the summariser's reads, consolidation: ``get_document``, ``put_document`` with
the version, a change made again on a conflict), the daily logs (``append_text``, beyond the
protocol; read by ``get_document``, listed by ``list_texts``), the summaries ``/clear`` and
``/new`` remove (``dialog/summaries/``: ``append_text``) and the consolidation record
(``get_document``, ``put_document``): the same files byte for byte. An offload store made
without a workspace (or for a folder outside it, or another encoding) runs the file code itself
(``toolresults/offload.py``), and so does an archive without a workspace (or for a folder
that is no key of it): the same writer and listing, called directly (``store/lines.py``
``folder_of`` decides for both), and so do the memory files of a memory folder that is no
store key. What still reads the files itself is derived or local: the recall index (a
derived index, rebuilt from the files it reads; with a DSN each replica's own, over its
local copies), the unfinished memory summaries' local copies (``memory/.pending/``) and the
``/dump_history`` files (with a DSN both are in the store too). With a PostgreSQL DSN the
steps reach the database through two collaborators of the step context:
:mod:`copaw_context.core.toolresults.store_blobs` (the same steps: ``put_blob``,
``read_lines``, ``blob_info``, ``expire_blobs``, ``sync``; the file store when it is down)
and the local copies of the streams and documents (:mod:`copaw_context.core.store.copies`:
the archive through :mod:`copaw_context.core.archive.shared`, the daily logs, MEMORY.md and
the consolidation through :mod:`copaw_context.core.memory.shared`: ``append``, ``read``,
``streams``, ``get_document``, ``put_document``, the leases). The consolidation's lease is
:func:`copaw_context.core.store.leases.hold_lease` on either store (the file store's lease
is the lock file consolidation held before).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from copaw_context.core.errors import CopawContextError

__all__ = [
    "AppendResult",
    "BlobInfo",
    "BlobLines",
    "Document",
    "Lease",
    "SearchHit",
    "StoreError",
    "StreamEntry",
    "StreamRecord",
    "VersionConflictError",
    "WorkspaceStore",
]


class StoreError(CopawContextError):
    """A workspace store operation failed (nothing was half-done: see each operation)."""


class VersionConflictError(StoreError):
    """``put_document`` was given a version that is no longer the document's."""

    def __init__(self, key: str, expected: str, current: str) -> None:
        self.key, self.expected, self.current = key, expected, current
        super().__init__(
            f"document {key!r} changed: expected version {expected!r}, it is {current!r} now; "
            "read it again and redo the change"
        )


@dataclass(frozen=True, slots=True)
class StreamRecord:
    """One record to append: its stream, its key (``None``: no exactly-once) and its line.

    ``data`` is one line without its newline. In a JSONL stream it is one JSON object, and its
    key is what the object names: ``"<session_id>/<archive_id>"`` for the archive's lines
    (:func:`copaw_context.core.store.lines.record_key`), so the file store finds the keys in
    the files themselves and the layout stays QwenPaw's.
    """

    stream: str
    key: str | None
    data: bytes


@dataclass(frozen=True, slots=True)
class StreamEntry:
    """A record read back: its position in the stream (0-based), its key and its line."""

    seq: int
    key: str | None
    data: bytes


@dataclass(frozen=True, slots=True)
class AppendResult:
    """What one ``append`` did: the keys written, and those already there (not written)."""

    appended: int
    skipped_keys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class BlobInfo:
    """A stored blob: its key, its line count (newlines + 1), its size and when it was put
    or last kept (the store's clock, seconds)."""

    key: str
    lines: int
    nbytes: int
    stamp: float


@dataclass(frozen=True, slots=True)
class BlobLines:
    """Lines ``first..last`` of a blob, exactly as stored (each with its ``\\n``; a ``\\r``
    stays part of its line), and the blob's line count."""

    data: bytes
    total_lines: int


@dataclass(frozen=True, slots=True)
class Document:
    """A document and its version (an opaque token; ``""`` and ``data=None``: no document)."""

    key: str
    data: bytes | None
    version: str


@dataclass(frozen=True, slots=True)
class Lease:
    """A lease held until ``expires_at`` (the store's clock), ``release`` or its holder's end."""

    name: str
    token: str
    expires_at: float


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A stream record that holds every token of a query: where it is and its line."""

    stream: str
    seq: int
    data: bytes


@runtime_checkable
class WorkspaceStore(Protocol):
    """The storage of one workspace (see the module docstring for who calls what)."""

    @property
    def workspace_id(self) -> str:
        """The workspace's identity: the agent id (the file store: its folder's name)."""
        ...

    @property
    def is_open(self) -> bool:
        """Whether the store can be used now (``False`` after :meth:`close`, or before a
        PostgreSQL store's ``open``; the file store is always open)."""
        ...

    async def append(self, records: Sequence[StreamRecord]) -> AppendResult:
        """Append ``records`` in order, all or nothing across their streams; a record whose
        key the stream already holds (or an earlier record of this call holds) is skipped.
        Durable when this returns. Used by the archive step and the daily logs."""
        ...

    async def read(self, stream: str, start: int = 0) -> list[StreamEntry]:
        """The records of ``stream`` from position ``start`` on, in append order (``[]`` for
        a stream never written). Used by recall's sources and ``/history``."""
        ...

    async def streams(self, prefix: str) -> list[str]:
        """The streams whose key starts with ``prefix``, sorted (the archive's days)."""
        ...

    async def stream_lengths(self, prefix: str) -> dict[str, int]:
        """The streams whose key starts with ``prefix`` and how many records each holds (what
        :meth:`read` from 0 returns): how a replica's copies find what is new in one call."""
        ...

    async def put_blob(self, folder: str, parts: Sequence[str], separator: str = "\n") -> BlobInfo:
        """Save ``separator.join(parts)`` (UTF-8, a lone surrogate as U+FFFD) as a new blob
        ``<folder>/<32 hex>.txt``; readable by every replica when this returns, durable after
        :meth:`sync`. Used by stage 1's offload and the request cut."""
        ...

    async def read_lines(self, key: str, first: int = 1, last: int | None = None) -> BlobLines:
        """Lines ``first..last`` (1-based, inclusive; ``None``: to the end) of blob ``key``.
        Raises :class:`StoreError` when there is no such blob. Used by ``read_file``."""
        ...

    async def blob_info(self, key: str) -> BlobInfo | None:
        """The blob ``key`` (``None`` when there is none)."""
        ...

    async def list_blobs(self, folder: str) -> list[BlobInfo]:
        """The blobs of ``folder``, by key."""
        ...

    async def expire_blobs(
        self, folder: str, max_age_seconds: float, referenced: Collection[str] = ()
    ) -> list[str]:
        """Delete the blobs of ``folder`` older than ``max_age_seconds`` whose key or name is
        not in ``referenced``; a referenced blob is kept and its stamp set to now. Returns
        the keys deleted. Used by the ``cleanup`` step."""
        ...

    async def get_document(self, key: str) -> Document:
        """The document ``key`` and its version. Used by the memory files and consolidation."""
        ...

    async def put_document(self, key: str, data: bytes, expected_version: str) -> Document:
        """Replace document ``key`` with ``data`` if its version is still
        ``expected_version`` (``""``: only if there is none); raises
        :class:`VersionConflictError` otherwise. Returns the new document."""
        ...

    async def acquire_lease(self, name: str, ttl_seconds: float) -> Lease | None:
        """Take lease ``name`` for ``ttl_seconds`` unless someone holds it (``None`` then).
        Used by consolidation and the compaction of one session."""
        ...

    async def renew_lease(self, lease: Lease, ttl_seconds: float) -> Lease | None:
        """Extend a lease still held; ``None`` when it expired (another may hold it now)."""
        ...

    async def release_lease(self, lease: Lease) -> None:
        """Give the lease up (nothing happens when it already expired)."""
        ...

    async def search(self, query: str, prefix: str, limit: int = 20) -> list[SearchHit]:
        """The records of the streams under ``prefix`` holding every token of ``query``
        (:func:`copaw_context.core.store.lines.search_tokens`: words, and character
        bigrams of Chinese), in stream then append order, at most ``limit``. Both stores
        answer alike on the same data. Used by recall."""
        ...

    async def sync(self) -> None:
        """Wait until everything written so far is durable."""
        ...

    async def close(self) -> None:
        """Release what the store holds (connections, leases of this process)."""
        ...
