"""``FileStore``: the workspace store over today's files, in QwenPaw's layout, byte for byte.

Streams are the archive's JSONL files (:mod:`.file_streams`, whose ``append_files`` is the
one writer of the day files: the dialog archive appends through :meth:`FileStore.append` in a
workspace without a DSN, with its own choice of the new lines and the line counts after,
beyond the protocol, and lists them through :meth:`FileStore.line_counts`, the counts cached
per file); blobs are the offload's
``<folder>/<32 hex>.txt`` files: this store is how the offload (``toolresults/offload.py``
``OffloadStore``) and ``read_file`` reach them in a workspace without a DSN. They are written
by the offload's writer (``toolresults/_offload_write.py``: temp file and rename, the fsync
group-committed by :mod:`copaw_context.core.workspace.durable`), swept by its cleanup
(``toolresults/_offload_sweep.py``: the ``.refs/`` manifests and the referenced names kept,
their time refreshed, a crash's temp files removed) and opened for ``read_file``, the
compactor's tails and the request-cut check by :meth:`FileStore.open_blob` (beyond the
protocol: a stream, so a read holds only its slice; read the same way as any file
``read_file`` reads); documents are plain files (MEMORY.md, ``memory/.consolidated.json``)
replaced atomically under their lock in ``memory/.locks/`` (the lock MEMORY.md's writers
take), their version a hash of their bytes, and the ``.md`` daily logs are appended to under
theirs (:mod:`.file_documents`: ``append_text``, beyond the protocol; how the memory files
reach them without a DSN); a lease is the lock file ``memory/.locks/<name>.lock``
(consolidation's), held by this process until it is released or its time is up. Nothing
here is a new format: a workspace written through this store reads as one written by the
code it stands for.

A lease of a live process ends at its time limit only within the process (another process
waits for the operating system's lock, released when the holder releases it or dies); a
dead process's lease ends at once. That is the one-machine guarantee; replicas use the
PostgreSQL store.
"""

from __future__ import annotations

import asyncio
import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import filelock

from copaw_context.core.store.file_documents import FileDocuments
from copaw_context.core.store.file_streams import (
    FileAppendResult,
    FreshLines,
    append_streams,
    line_counts,
    list_streams,
    read_stream,
)
from copaw_context.core.store.lines import (
    BLOB_NAME,
    check_key,
    matches,
    read_line_range,
    search_tokens,
)
from copaw_context.core.store.protocol import (
    BlobInfo,
    BlobLines,
    Lease,
    SearchHit,
    StoreError,
    StreamEntry,
    StreamRecord,
)
from copaw_context.core.toolresults._offload_sweep import sweep_files
from copaw_context.core.toolresults._offload_write import INLINE_CHARS, write_atomically
from copaw_context.core.workspace import durable
from copaw_context.core.workspace.confine import check_inside
from copaw_context.core.workspace.locked_io import AnyLock, file_lock
from copaw_context.core.workspace.safe_open import ReadFailure, open_inside, resolve_inside

__all__ = ["FileStore"]

_SECONDS_PER_DAY = 86400.0
_MANIFEST_SECONDS = 90 * _SECONDS_PER_DAY
"""The manifests' age limit when none is given (``offload_manifest_retention_days``'s default)."""
_CHUNK = 1 << 20


@dataclass
class _Held:
    lock: AnyLock
    token: str
    expires_at: float
    owner: int


# Leases this process holds, by lock file: another FileStore of the process (or a later
# acquire after the time limit) finds them here.
_LEASES: dict[str, _Held] = {}
_LEASES_GUARD = threading.Lock()


class FileStore(FileDocuments):
    """The :class:`~copaw_context.core.store.protocol.WorkspaceStore` of one workspace folder."""

    def __init__(
        self,
        workspace: str | Path,
        workspace_id: str | None = None,
        *,
        clock: Callable[[], float] = time.time,
        lock_timeout: float = 30.0,
        locks_dir: str = "memory/.locks",
    ) -> None:
        self._workspace = Path(workspace).expanduser().absolute()
        self._id = workspace_id or self._workspace.name
        self._clock = clock
        self._lock_timeout = lock_timeout
        self._locks = self._workspace / check_key(locks_dir, "locks folder")

    @property
    def workspace_id(self) -> str:
        """The agent id given, else the workspace folder's name."""
        return self._id

    @property
    def is_open(self) -> bool:
        """Always: the files need no connection (:meth:`close` releases leases only)."""
        return True

    @property
    def workspace(self) -> Path:
        """The absolute workspace folder."""
        return self._workspace

    # ------------------------------------------------------------------ streams
    async def append(
        self, records: Sequence[StreamRecord], *, fresh: FreshLines | None = None
    ) -> FileAppendResult:
        """Append, all or nothing, exactly once by key (see :mod:`.file_streams`).

        Beyond the protocol: ``fresh(stream, fd)``, called under the stream's lock with its
        file's open descriptor, chooses the lines to write there instead of the key rule
        (the dialog archive's rule, by key and by part: ``DialogArchive.not_yet_archived``;
        ``skipped_keys`` is then empty), and the result's ``lengths`` give each file written
        and its line count after the append (what the summary message cites)."""
        return await asyncio.to_thread(
            append_streams, self._workspace, list(records), self._lock_timeout, fresh
        )

    async def read(self, stream: str, start: int = 0) -> list[StreamEntry]:
        """The lines of the stream's file from ``start`` on."""
        return await asyncio.to_thread(read_stream, self._workspace, stream, start)

    async def streams(self, prefix: str) -> list[str]:
        """The ``.jsonl`` files under ``prefix``."""
        return await asyncio.to_thread(list_streams, self._workspace, prefix)

    async def stream_lengths(self, prefix: str) -> dict[str, int]:
        """Each ``.jsonl`` file under ``prefix`` and its records (a torn last line not one)."""

        def lengths() -> dict[str, int]:
            names = list_streams(self._workspace, prefix)
            return {name: len(read_stream(self._workspace, name, 0)) for name in names}

        return await asyncio.to_thread(lengths)

    async def line_counts(
        self, prefix: str, names: re.Pattern[str] | None = None
    ) -> dict[str, int]:
        """Beyond the protocol: each ``.jsonl`` file under ``prefix`` (its name matching
        ``names``) and its line count, an unterminated last line counted (the day files the
        summary cites, ``DialogArchive.list_files``). Unlike :meth:`stream_lengths`, which
        reads whole streams, the counts are cached per file and a file is read on from where
        the last count stopped (:func:`.file_streams.line_counts`): the step path's cost."""
        return await asyncio.to_thread(line_counts, self._workspace, prefix, names)

    # ------------------------------------------------------------------ blobs
    async def put_blob(self, folder: str, parts: Sequence[str], separator: str = "\n") -> BlobInfo:
        """Write with the offload's writer: on the loop for a text of at most
        ``INLINE_CHARS`` characters, else in a worker thread (``OffloadStore.save_parts``)."""
        directory = self.path(folder)
        args = (directory, tuple(parts), separator, "utf-8", self._workspace)
        try:
            if sum(len(part) for part in parts) <= INLINE_CHARS:
                saved = write_atomically(*args)
            else:
                saved = await asyncio.to_thread(write_atomically, *args)
        except OSError as error:
            raise StoreError(f"cannot save a blob in {folder}: {error}") from error
        key = f"{folder}/{saved.path.name}"
        return BlobInfo(key, saved.lines, saved.nbytes, self._clock())

    async def read_lines(self, key: str, first: int = 1, last: int | None = None) -> BlobLines:
        """Lines of the blob's file, read in chunks through a confined open."""
        path = self.path(key)

        def read() -> BlobLines:
            try:
                check_inside(path, self._workspace, write=False)
                handle, _ = open_inside(path.resolve(), [self._workspace])
            except (OSError, ReadFailure) as error:
                raise StoreError(f"no blob {key} in {self._workspace}: {error}") from error
            with handle:
                return read_line_range(handle, first, last)

        return await asyncio.to_thread(read)

    async def blob_info(self, key: str) -> BlobInfo | None:
        """The blob file's size, line count and modification time."""
        return await asyncio.to_thread(self._blob_info, key)

    def _blob_info(self, key: str) -> BlobInfo | None:
        path = self.path(key)
        try:
            check_inside(path, self._workspace, write=False)
            handle, _ = open_inside(path.resolve(), [self._workspace])
        except (OSError, ReadFailure):
            return None
        with handle:
            info = os.fstat(handle.fileno())
            newlines = 0
            while chunk := handle.read(_CHUNK):
                newlines += chunk.count(b"\n")
        return BlobInfo(key, newlines + 1, info.st_size, info.st_mtime)

    async def list_blobs(self, folder: str) -> list[BlobInfo]:
        """The ``<32 hex>.txt`` files of ``folder``."""
        directory = self.path(folder)

        def listing() -> list[BlobInfo]:
            try:
                names = sorted(n for n in os.listdir(directory) if BLOB_NAME.fullmatch(n))
            except FileNotFoundError:
                return []
            found = (self._blob_info(f"{folder}/{name}") for name in names)
            return [info for info in found if info is not None]

        return await asyncio.to_thread(listing)

    def open_blob(self, key: str, roots: Sequence[Path] = ()) -> tuple[BinaryIO, Path]:
        """Open blob ``key``'s file for reading, once, and return the stream and where the
        file really is (beyond the protocol; blocking: call it in a worker thread).

        Checked as ``read_file`` checks any path: links resolved, inside the workspace or
        one of ``roots``, a regular file (never a fifo or a device), and checked again once
        open. Raises :class:`~copaw_context.core.workspace.safe_open.ReadFailure` (its text
        is the model's error) and :class:`StoreError` for a key that is no key."""
        allowed = (self._workspace, *roots)
        return open_inside(resolve_inside(str(self.path(key)), self._workspace, allowed), allowed)

    async def expire_blobs(
        self,
        folder: str,
        max_age_seconds: float,
        referenced: Collection[str | Path] = (),
        *,
        manifest_age_seconds: float | None = None,
        clock: Callable[[], float] | None = None,
    ) -> list[str]:
        """The offload's sweep of ``folder``, once: an own file older than
        ``max_age_seconds`` goes unless ``referenced`` (names, keys or paths: a path's link
        target counts too) or a live ``.refs/`` manifest names it; a referenced one gets its
        time refreshed; a crash's temp files go after an hour. Beyond the protocol: the
        manifests' age limit (``manifest_age_seconds``, never below ``max_age_seconds``;
        default 90 days) and the ``clock`` of the caller (default: the store's)."""
        retention = max(0.0, max_age_seconds)
        manifests = _MANIFEST_SECONDS if manifest_age_seconds is None else manifest_age_seconds
        removed = await asyncio.to_thread(
            sweep_files,
            self.path(folder),
            self._workspace,
            list(referenced),
            clock=clock or self._clock,
            retention_seconds=retention,
            manifest_seconds=max(retention, manifests),
        )
        return sorted(f"{folder}/{path.name}" for path in removed)

    # ------------------------------------------------------------------ leases
    async def acquire_lease(self, name: str, ttl_seconds: float) -> Lease | None:
        """Take ``memory/.locks/<name>.lock`` without waiting (``None`` when it is held)."""
        path = self._locks / f"{check_key(name, 'lease')}.lock"
        return await asyncio.to_thread(self._acquire, name, str(path), ttl_seconds)

    def _acquire(self, name: str, path: str, ttl: float) -> Lease | None:
        now = self._clock()
        with _LEASES_GUARD:
            held = _LEASES.get(path)
            if held is not None:
                if held.expires_at > now:
                    return None
                del _LEASES[path]  # its time is up: the lock is free for the next holder
                held.lock.release()
            try:
                lock = file_lock(Path(path), self._lock_timeout, self._workspace)
                lock.acquire(timeout=0)
            except filelock.Timeout:
                return None  # another process holds it
            except OSError as error:
                raise StoreError(f"cannot take lease {name}: {error}") from error
            token = uuid.uuid4().hex
            _LEASES[path] = _Held(lock, token, now + ttl, id(self))
        return Lease(name, token, now + ttl)

    async def renew_lease(self, lease: Lease, ttl_seconds: float) -> Lease | None:
        """A later time limit for a lease still held."""
        path = str(self._locks / f"{lease.name}.lock")
        now = self._clock()
        with _LEASES_GUARD:
            held = _LEASES.get(path)
            if held is None or held.token != lease.token:
                return None
            if held.expires_at <= now:
                del _LEASES[path]
                held.lock.release()
                return None
            held.expires_at = now + ttl_seconds
        return Lease(lease.name, lease.token, now + ttl_seconds)

    async def release_lease(self, lease: Lease) -> None:
        """Release the lock file (when this lease still holds it)."""
        path = str(self._locks / f"{lease.name}.lock")
        with _LEASES_GUARD:
            held = _LEASES.get(path)
            if held is None or held.token != lease.token:
                return
            del _LEASES[path]
            held.lock.release()

    # ------------------------------------------------------------------ the rest
    async def search(self, query: str, prefix: str, limit: int = 20) -> list[SearchHit]:
        """A scan of the streams under ``prefix`` (the recall index stays ``memory/search``)."""
        tokens = search_tokens(query)
        if not tokens or limit <= 0:
            return []
        hits: list[SearchHit] = []
        for stream in await self.streams(prefix):
            for entry in await self.read(stream):
                if matches(tokens, entry.data):
                    hits.append(SearchHit(stream, entry.seq, entry.data))
                    if len(hits) >= limit:
                        return hits
        return hits

    async def sync(self) -> None:
        """The group-committed fsyncs of the blobs written so far."""
        await durable.durable()

    async def close(self) -> None:
        """Release the leases this store took."""
        with _LEASES_GUARD:
            mine = [path for path, held in _LEASES.items() if held.owner == id(self)]
            for path in mine:
                _LEASES.pop(path).lock.release()
