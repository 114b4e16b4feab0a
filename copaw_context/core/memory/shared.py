"""The memory files in a shared workspace store (issue 20): MEMORY.md and the daily logs.

With a PostgreSQL store every replica of the agent (its agent id) shares one MEMORY.md and
one log per day, and keeps its own files as copies, so the system prompt, recall and
``read_file`` read files as before:

- MEMORY.md is a store document with a version. A change (``memory_edit``, the
  consolidation) is made on the local copy brought up to date first, then put with
  compare-and-swap; when another replica wrote in between, it is made again on that
  text: no lost update. A local file edited by hand since the last sync is put (with its
  version check too); edited on both sides, the store's text wins and the local one is kept
  in ``<memory_dir>/backups/``.
- A daily log is a stream of lines (``memory/YYYY-MM-DD.md``), its heading appended once by
  key; entries of every replica are copied into the local file in the database's order
  (:class:`LogCopies`).

A store that cannot be reached is a :class:`MemoryFileError` for the change ("nothing was
written"): the tool tells the model, the summariser keeps its entries for the next try.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import random
from collections.abc import AsyncIterator, Callable
from datetime import date
from pathlib import Path

from copaw_context.core.memory._checks import MemoryFileError
from copaw_context.core.memory._io import (
    acquire_async,
    append_bytes,
    atomic_write,
    file_lock,
    locked,
)
from copaw_context.core.memory.files import DAILY_LOG, MEMORY_FILE, MemoryFiles
from copaw_context.core.store.copies import MIRROR_DIR, StoreOpener, StreamCopies
from copaw_context.core.store.leases import LeaseHeldError, hold_lease
from copaw_context.core.store.lines import check_key
from copaw_context.core.store.protocol import (
    StoreError,
    StreamEntry,
    StreamRecord,
    VersionConflictError,
)
from copaw_context.core.store.protocol import WorkspaceStore as _Store
from copaw_context.core.workspace.confine import OutsideWorkspaceError, read_bytes_inside
from copaw_context.core.workspace.confine_write import open_append_inside

__all__ = ["LogCopies", "SharedMemory"]

_KEY = MEMORY_FILE

logger = logging.getLogger("copaw_context")


class LogCopies(StreamCopies):
    """Copies the store's daily logs into the local memory folder (under each log's lock)."""

    what = "daily logs"
    names = DAILY_LOG

    def lock(self, path: Path) -> Path:
        """The lock a writer of the local file ``path`` holds (the memory files' own)."""
        return self.directory / ".locks" / f"{path.name}.lock"

    def _copy(self, stream: str, entries: list[StreamEntry]) -> None:
        path = self.path(stream)
        with locked(self.lock(path), self.lock_timeout, self.workspace):
            fd = open_append_inside(path, self.workspace)
            try:
                fresh = self.fresh(stream, entries, fd)
                if fresh:
                    payload = b"".join(entry.data + b"\n" for entry in fresh)
                    append_bytes(path, payload, b"", self.workspace)
                self.copied(stream, entries, fd)
            finally:
                os.close(fd)


class SharedMemory:
    """MEMORY.md and the daily logs of one workspace in its store (see the module docs)."""

    lease_seconds: float = 60.0
    """How long a lease (the consolidation's) lasts unless renewed: how long the others
    wait for a holder that hangs (PostgreSQL frees a dead holder's lease at once: its
    advisory lock goes with its connection)."""

    def __init__(self, opener: StoreOpener, files: MemoryFiles) -> None:
        self.opener = opener
        self.files = files
        self.logs = LogCopies(opener, files.memory_dir, files.workspace)
        self._seen: tuple[str, tuple[int, int, int] | None] | None = None
        """(the document's version, the local file's stat) at this process's last sync."""

    @classmethod
    def of(cls, opener: StoreOpener, files: MemoryFiles) -> SharedMemory | None:
        """The shared memory of ``files``; ``None`` (logged) for a memory folder whose name
        is no store key (the files then stay the memory)."""
        try:
            return cls(opener, files)
        except (ValueError, StoreError) as error:
            logger.warning("copaw-context: the memory stays in the local files: %s", error)
            return None

    async def _store(self, action: str) -> _Store:
        store = await self.opener.store()
        if store is None:
            raise MemoryFileError(
                f"the workspace store is unavailable, so {action} was not written; try again"
            )
        return store

    # ------------------------------------------------------------------ the daily log
    async def append_log(self, path: Path, entry: str, header: str) -> None:
        """Append ``entry`` (its lines) to the log stream of ``path``; the first entry of a
        day brings the heading (once, whichever replica is first)."""
        store = await self._store("the log entry")
        stream = self.logs.stream(path)
        if stream is None:
            raise MemoryFileError(f"{path} is not a daily log of {self.files.memory_dir}")
        heading = header.removesuffix("\n").split("\n")  # "# day\n\n": its line, a blank
        records = [
            StreamRecord(stream, f"heading:{i}", line.encode()) for i, line in enumerate(heading)
        ]
        records += [
            StreamRecord(stream, None, line.encode("utf-8"))
            for line in entry.rstrip("\n").split("\n")
        ]
        try:
            await store.append(records)
        except Exception as error:
            raise MemoryFileError(
                f"cannot append to {stream}: {error}; nothing was written"
            ) from error
        await self.logs.refresh([stream])

    async def refresh_logs(self, days: list[date] | None = None) -> bool:
        """Copy what other replicas logged (``days``: those days only)."""
        if days is None:
            return await self.logs.refresh()
        return await self.logs.refresh([f"{self.logs.folder}/{day.isoformat()}.md" for day in days])

    # ------------------------------------------------------------------ consolidation
    @contextlib.asynccontextmanager
    async def hold(self, name: str, wait_seconds: float) -> AsyncIterator[None]:
        """Hold the store's lease ``name`` (one replica at a time), waiting up to
        ``wait_seconds`` for another holder; renewed while held."""
        store = await self._store(f"the {name} run")
        try:
            async with hold_lease(store, name, wait_seconds, self.lease_seconds):
                yield
        except LeaseHeldError as error:
            raise MemoryFileError(
                f"another replica has held the {name} lease for over {wait_seconds:g} s; "
                "nothing was done, the next run tries again"
            ) from error

    async def pull_document(self, path: Path) -> None:
        """Replace the local ``path`` with the store's document of that key (kept when the
        store has none)."""
        store, key = await self._store(path.name), self._key(path)
        doc = await store.get_document(key)
        if doc.data is not None:
            await asyncio.to_thread(atomic_write, path, doc.data, self.files.workspace)

    async def push_document(self, path: Path) -> None:
        """Put the local ``path`` as the store's document of that key."""
        store, key = await self._store(path.name), self._key(path)
        data = await asyncio.to_thread(read_bytes_inside, path, self.files.workspace)
        doc = await store.get_document(key)
        if doc.data != data:
            await store.put_document(key, data, doc.version)

    def _key(self, path: Path) -> str:
        return check_key(path.relative_to(self.files.workspace).as_posix())

    # ------------------------------------------------------------------ MEMORY.md
    async def pull(self) -> None:
        """Bring the local MEMORY.md up to date with the store's (a hand edit made since the
        last sync is put there); ``MemoryFileError`` when the store cannot be reached. Only
        the document's version is compared when neither it nor the local file changed since
        this replica's last sync (once a model call: no lock, no write)."""
        store = await self._store(_KEY)
        try:
            doc = await store.get_document(_KEY)
        except Exception as error:
            raise MemoryFileError(
                f"cannot read {_KEY} from the workspace store: {error}"
            ) from error
        if self._seen is not None and self._seen == (doc.version, await self._stamp()):
            return
        await self._sync(None)

    async def update(self, change: Callable[[str], str]) -> Path | None:
        """Replace MEMORY.md with ``change(current)``, locally and in the store, with
        compare-and-swap, made again while other replicas write first (for up to the lock
        timeout, as a file lock waits); returns the local backup of the old text."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.files.lock_timeout
        tries = 0
        while True:
            done, backup = await self._sync(change)
            if done:
                return backup
            tries += 1
            if loop.time() >= deadline:
                raise MemoryFileError(
                    f"{_KEY} kept changing on other replicas ({tries} tries in "
                    f"{self.files.lock_timeout:g} s); nothing was written, try again"
                )
            await asyncio.sleep(random.uniform(0, min(1.0, 0.01 * 2**tries)))

    async def _sync(self, change: Callable[[str], str] | None) -> tuple[bool, Path | None]:
        """One round under MEMORY.md's local lock (held across the store's read and put, so
        a change of this replica in flight is never taken for a hand edit)."""
        store = await self._store(_KEY)
        files = self.files
        lock = file_lock(files.lock_path(MEMORY_FILE), files.lock_timeout, files.workspace)
        await acquire_async(lock, files.lock_timeout)
        try:
            try:
                doc = await store.get_document(_KEY)
            except Exception as error:
                raise MemoryFileError(
                    f"cannot read {_KEY} from the workspace store: {error}"
                ) from error
            local, backup, before = await asyncio.to_thread(
                self._apply, doc.data, doc.version, change
            )
            if local is None:
                self._seen = (doc.version, await self._stamp())
                return True, backup
            try:
                new = await store.put_document(_KEY, local, doc.version)
            except BaseException as error:  # undone here (cancelled too): made again or refused
                await asyncio.to_thread(self._restore, before)
                if isinstance(error, VersionConflictError):
                    return False, backup
                if not isinstance(error, Exception):
                    raise
                raise MemoryFileError(
                    f"cannot write {_KEY} to the workspace store: {error}; "
                    f"the local {_KEY} is unchanged"
                ) from error
            await asyncio.to_thread(self._save_synced, new.version, local)
            self._seen = (new.version, await self._stamp())
            return True, backup
        finally:
            lock.release()

    def _apply(
        self, shared: bytes | None, version: str, change: Callable[[str], str] | None
    ) -> tuple[bytes | None, Path | None, bytes]:
        """(MEMORY.md's lock held) The store's text into the local file unless only the
        local file moved since the last sync (a hand edit, put then), then ``change``.
        Returns the bytes to put (``None``: nothing), the backup made, and the local bytes
        before ``change`` (put back if the store refuses)."""
        files = self.files
        local = self._local()
        synced = self._synced()
        local_moved = synced is None or synced[1] != _digest(local)
        store_moved = synced is None or synced[0] != version
        backup = None
        if shared is not None and local != shared and (store_moved or not local_moved):
            if local_moved and local.strip():
                backup = files.backup(local)  # changed on both sides: the local text kept
            atomic_write(files.memory_path(), shared, files.workspace)
            local = shared
        if shared is not None and local == shared:
            self._save_synced(version, local)
        before = local
        if change is not None:
            backup = files.write_memory_locked(change(local.decode("utf-8", "replace")))
            local = self._local()
        if local == (shared or b"") or (shared is None and not local.strip()):
            return None, backup, before
        return local, backup, before

    async def _stamp(self) -> tuple[int, int, int] | None:
        """The local MEMORY.md's (inode, size, mtime), ``None`` when there is none."""
        try:
            info = await asyncio.to_thread(self.files.memory_path().stat)
        except OSError:
            return None
        return info.st_ino, info.st_size, info.st_mtime_ns

    def _restore(self, data: bytes) -> None:
        atomic_write(self.files.memory_path(), data, self.files.workspace)

    def _local(self) -> bytes:
        try:
            return read_bytes_inside(self.files.memory_path(), self.files.workspace)
        except FileNotFoundError:
            return b""

    def _synced_file(self) -> Path:
        return self.files.memory_dir / MIRROR_DIR / f"{MEMORY_FILE}.json"

    def _synced(self) -> tuple[str, str] | None:
        """(the store's version, the local bytes' digest) at the last sync, if any."""
        with contextlib.suppress(OSError, ValueError, OutsideWorkspaceError):
            saved = json.loads(read_bytes_inside(self._synced_file(), self.files.workspace))
            mine = saved.get(self.opener.workspace_id) if isinstance(saved, dict) else None
            if isinstance(mine, list) and len(mine) == 2 and all(isinstance(v, str) for v in mine):
                return mine[0], mine[1]
        return None

    def _save_synced(self, version: str, local: bytes) -> None:
        if self._synced() == (version, _digest(local)):
            return  # already recorded: no write at every sync
        target = self._synced_file()
        saved: object = {}
        with contextlib.suppress(OSError, ValueError, OutsideWorkspaceError):
            saved = json.loads(read_bytes_inside(target, self.files.workspace))
        record = saved if isinstance(saved, dict) else {}
        record[self.opener.workspace_id] = [version, _digest(local)]
        atomic_write(target, json.dumps(record, sort_keys=True).encode(), self.files.workspace)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
