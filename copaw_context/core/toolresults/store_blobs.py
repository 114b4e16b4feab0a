"""The offloaded tool results through the workspace store (issue 20, step 5).

With no store configured there is no :class:`StoreBlobs` (:func:`blobs_for` gives ``None``)
and the offload, ``read_file``, the compactor's tails and the TTL cleanup reach the files
through the workspace's file store (``OffloadStore.files``, ``ReadFileTool.files``), byte
for byte as before. With a PostgreSQL DSN, stage 1's saves become blobs in the database and
the notice names the blob's key (``tool_result/<32 hex>.txt``, workspace-relative), so any
replica of the workspace (its agent id: agent.json ``id``, else the folder's name) can follow
it: ``read_file`` on such a key copies the blob from the store into the replica's own folder
(by line ranges of about :data:`COPY_BYTES`, then an atomic rename) and reads it with the
same reader as a local file; the compactor's tails and the cleanup ask the store.

The store is opened lazily, once per workspace and event loop, shared by the engine and its
``read_file`` tool. A store that cannot be opened or written degrades: the result is saved
in the local file through the file store (the notice names that file), the failure is
logged, and the next attempt waits ``retry_seconds``; the agent's reply never fails for it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import filelock

from copaw_context.core.config.running import RunningConfig
from copaw_context.core.store.lines import BLOB_NAME, check_key, encode_text
from copaw_context.core.store.protocol import StoreError, WorkspaceStore
from copaw_context.core.store.select import open_store, store_dsn
from copaw_context.core.toolresults import offload_refs
from copaw_context.core.toolresults._offload_write import SavedText
from copaw_context.core.toolresults._saved_tails import KEPT_BYTES, remember_tail, tail_of
from copaw_context.core.toolresults.store_refs import live_shared_names, put_manifest
from copaw_context.core.workspace.confine import OutsideWorkspaceError
from copaw_context.core.workspace.locked_io import atomic_write_chunks

__all__ = ["COPY_BYTES", "StoreBlobs", "blobs_for", "workspace_agent_id"]

logger = logging.getLogger("copaw_context")

_TAIL_LINES = 64
COPY_BYTES = 1 << 20
"""About how many bytes of a blob one read of :meth:`StoreBlobs.fetch` copies."""
_OPEN: dict[tuple[str, str], StoreBlobs] = {}


def workspace_agent_id(workspace: Path) -> str:
    """The workspace's identity in a shared store: agent.json ``id``, else the folder's name."""
    try:
        value = json.loads((workspace / "agent.json").read_text(encoding="utf-8")).get("id")
    except (OSError, ValueError, AttributeError):
        value = None
    return value if isinstance(value, str) and value.strip() else workspace.name


def blobs_for(config: RunningConfig, workspace: Path) -> StoreBlobs | None:
    """The workspace's blobs in its configured store, one per workspace and DSN (``None``
    without a DSN: the file store). Raises ``ConfigError`` for a DSN of another kind."""
    dsn, _ = store_dsn(config)
    if dsn is None:
        return None
    folder = Path(workspace).expanduser().absolute()
    found = _OPEN.get((dsn, str(folder)))
    if found is None:
        found = _OPEN[(dsn, str(folder))] = StoreBlobs(config, folder)
    return found


class StoreBlobs:
    """The lazily opened store of one workspace, for the offload and ``read_file``."""

    def __init__(
        self,
        config: RunningConfig,
        workspace: Path,
        *,
        retry_seconds: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._config = config
        self.workspace = workspace
        self.workspace_id = workspace_agent_id(workspace)
        self._retry = retry_seconds
        self._clock = clock
        self._store: WorkspaceStore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock: asyncio.Lock | None = None
        self._failed_at: float | None = None
        self._unreported: str | None = None
        self.failure: str | None = None
        """Why the store was last unusable (``None`` while it works)."""

    async def store(self) -> WorkspaceStore | None:
        """The open store (opened on first use, and again once closed behind this
        object's back), or ``None`` while it cannot be opened."""
        loop = asyncio.get_running_loop()
        if self._store is not None and self._loop is loop and self._store.is_open:
            return self._store
        if self._lock is None or self._loop is not loop:
            self._lock, self._loop, self._store = asyncio.Lock(), loop, None
        async with self._lock:
            if self._store is not None and self._store.is_open:
                return self._store
            if self._resting():
                return None
            try:
                self._store = await open_store(self._config, self.workspace, self.workspace_id)
            except Exception as error:  # a store that is down never fails the reply
                self._fail(f"cannot open the workspace store: {error}")
                return None
            self._failed_at, self.failure = None, None
            return self._store

    def _resting(self) -> bool:
        """Whether the store failed less than ``retry_seconds`` ago."""
        failed = self._failed_at
        return failed is not None and 0 <= self._clock() - failed < self._retry

    def take_failure(self) -> str | None:
        """A failure not reported yet (once each: the step's event says so), else ``None``."""
        why, self._unreported = self._unreported, None
        return why

    def _fail(self, why: str) -> None:
        self._failed_at, self.failure, self._unreported = self._clock(), why, why
        logger.warning("copaw-context: %s; tool results stay in the local files", why)

    def key(self, directory: Path, name: str) -> str | None:
        """The store key of ``name`` in ``directory`` (``None`` outside the workspace)."""
        try:
            return check_key(f"{directory.relative_to(self.workspace).as_posix()}/{name}")
        except (ValueError, StoreError):
            return None

    async def save(self, directory: Path, parts: Sequence[str], separator: str) -> SavedText | None:
        """Save the joined parts as a blob of ``directory``'s folder; ``None`` when the store
        cannot take it (the caller writes the local file instead)."""
        folder = self.key(directory, "x")
        if folder is None or self._resting():  # failed a moment ago: no wait on a timeout
            return None
        store = await self.store()
        if store is None:
            return None
        try:
            info = await store.put_blob(folder.rpartition("/")[0], parts, separator)
        except Exception as error:  # the pool reconnects; the next try waits retry_seconds
            self._fail(f"cannot save a tool result in the workspace store: {error}")
            return None
        self._failed_at = self.failure = None
        path = directory / info.key.rpartition("/")[2]
        remember_tail(str(path), info.nbytes, _end_bytes(parts, separator))
        return SavedText(path, info.lines, info.nbytes, key=info.key)

    async def tail(self, key: str, max_bytes: int) -> str | None:
        """The last ``max_bytes`` (whole lines) of blob ``key``, as a file's tail reads."""
        store = await self.store()
        if store is None:
            return None
        try:
            info = await store.blob_info(key)
            if info is None:
                return None
            lines = _TAIL_LINES
            while True:
                first = max(1, info.lines - lines)
                data = (await store.read_lines(key, first)).data
                if first == 1 or len(data) >= max_bytes:
                    return tail_of(data, info.nbytes, max_bytes)
                lines *= 4
        except Exception as error:
            logger.warning(
                "copaw-context: cannot read the end of %s from the store: %s", key, error
            )
            return None

    async def fill_tails(
        self,
        directory: Path,
        paths: Sequence[str | Path],
        tails: list[str | None],
        owns: Callable[[str | Path], bool],
        max_bytes: int,
    ) -> None:
        """Fill the ``tails`` still ``None`` of ``directory``'s own ``paths`` from the store."""
        for i, path in enumerate(paths):
            key = self.key(directory, Path(path).name) if tails[i] is None and owns(path) else None
            if key is not None:
                tails[i] = await self.tail(key, max_bytes)

    async def expire(
        self, folder: Path, max_age_seconds: float, keep: set[str], manifests: tuple[float, float]
    ) -> list[Path]:
        """Expire ``folder``'s blobs older than ``max_age_seconds`` that neither ``keep`` nor a
        live manifest of this folder (``manifests``: their age limit, now) names."""
        prefix = self.key(folder, "x")
        store = await self.store() if prefix is not None else None
        if store is None or prefix is None:
            return []
        live = await asyncio.to_thread(_live_manifest_names, folder, self.workspace, *manifests)
        if live is None:
            return []  # the manifests cannot be read: keep every blob
        key = prefix.rpartition("/")[0]
        try:  # the manifests of every replica's sessions, in the store
            live |= await live_shared_names(store, key, manifests[1], manifests[0])
        except Exception as error:
            logger.warning("copaw-context: the store's manifests cannot be read (%s); kept", error)
            return []
        try:
            gone = await store.expire_blobs(key, max_age_seconds, keep | live)
        except Exception as error:
            logger.warning("copaw-context: the store's offload cleanup failed: %s", error)
            return []
        return [folder / key.rpartition("/")[2] for key in gone]

    async def record_manifest(
        self, directory: Path, session_id: str, names: frozenset[str], now: float
    ) -> None:
        """Put a session's manifest of ``directory`` in the store (:mod:`.store_refs`)."""
        prefix = self.key(directory, "x")
        store = await self.store() if prefix is not None else None
        if store is not None and prefix is not None:
            await put_manifest(store, prefix.rpartition("/")[0], session_id, names, now)

    async def sync(self) -> None:
        """The store's sync (what a reply's end waits for), when it is open."""
        if self._store is not None and self._loop is asyncio.get_running_loop():
            try:
                await self._store.sync()
            except Exception as error:
                logger.warning("copaw-context: the workspace store's sync failed: %s", error)

    async def close(self) -> None:
        """Close the store (the next use opens it again)."""
        store, self._store = self._store, None
        if store is not None and self._loop is asyncio.get_running_loop():
            try:
                await store.close()
            except Exception as error:
                logger.warning("copaw-context: closing the workspace store failed: %s", error)

    async def starts_with(self, key: str, head: bytes) -> bool:
        """Whether blob ``key`` begins with ``head`` (``False`` when it cannot be read)."""
        store = await self.store()
        if store is None:
            return False
        try:
            lines = await store.read_lines(check_key(key), 1, head.count(b"\n") + 1)
        except Exception:  # no such blob, or the store failed: not shown to be ours
            return False
        return lines.data.startswith(head)

    async def fetch(self, key: str, path: Path) -> str | None:
        """Copy blob ``key`` into the local ``path`` (for ``read_file``); ``None`` when done,
        else why it could not be (an error text for the model). The copy goes by line
        ranges of about :data:`COPY_BYTES` into a temp file renamed into place at the end,
        so a large blob is never whole in memory."""
        if not BLOB_NAME.fullmatch(key.rpartition("/")[2]):
            return f"{key} is not a saved tool result"
        store = await self.store()
        if store is None:
            return f"the workspace store is unavailable ({self.failure})"
        missing = (
            f"{key} is not a saved result of this workspace "
            f"(workspace {self.workspace_id!r} in its store)"
        )
        try:
            info = await store.blob_info(check_key(key))
        except StoreError:
            return missing
        except Exception as error:
            return f"the workspace store could not read {key} ({error})"
        if info is None:
            return missing
        copy = _BlobCopy(store, key, info.lines, info.nbytes, asyncio.get_running_loop())
        try:
            await asyncio.to_thread(atomic_write_chunks, path, copy.chunks(), self.workspace)
        except _ReadFailed as failed:
            if isinstance(failed.error, StoreError):
                return missing
            return f"the workspace store could not read {key} ({failed.error})"
        except OSError as error:
            return f"cannot keep a copy of {key} in {path.parent} ({error})"
        finally:
            copy.stopped.set()  # cancelled meanwhile: the thread stops at its next read
        return None


class _ReadFailed(Exception):
    """A read of the store failed during a copy (``error``): the temp file is removed."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


class _BlobCopy:
    """The line ranges of one blob, read on the event loop for the thread writing them."""

    def __init__(
        self,
        store: WorkspaceStore,
        key: str,
        lines: int,
        nbytes: int,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self.store, self.key, self.lines, self.nbytes, self.loop = store, key, lines, nbytes, loop
        self.stopped = threading.Event()

    def chunks(self) -> Iterator[bytes]:
        """The blob's bytes, :data:`COPY_BYTES` or so at a time (one line at least)."""
        step = max(1, self.lines * COPY_BYTES // max(1, self.nbytes))
        copied = 0
        for first in range(1, self.lines + 1, step):
            if self.stopped.is_set():
                raise _ReadFailed(asyncio.CancelledError())
            last = min(self.lines, first + step - 1)
            reading = self.store.read_lines(self.key, first, last)
            try:
                data = asyncio.run_coroutine_threadsafe(reading, self.loop).result()
            except BaseException as error:
                raise _ReadFailed(error) from error
            copied += len(data.data)
            yield data.data
        if copied != self.nbytes:
            raise _ReadFailed(StoreError(f"{self.key} changed while it was copied"))


def _live_manifest_names(
    folder: Path, workspace: Path, max_age: float, now: float
) -> set[str] | None:
    """The names the live manifests of ``folder`` keep (``None``: they cannot be read)."""
    try:
        with (
            offload_refs.refs_folder(folder, workspace) as refs_fd,
            offload_refs.refs_lock(refs_fd, folder, workspace),
        ):
            return offload_refs.live_names(refs_fd, folder / offload_refs.REFS_DIR, now, max_age)
    except (OSError, filelock.Timeout, OutsideWorkspaceError) as error:
        logger.warning("copaw-context: offload cleanup in the store skipped: %s", error)
        return None


def _end_bytes(parts: Sequence[str], separator: str) -> bytes:
    """The last (at least) :data:`KEPT_BYTES` bytes of the joined parts, as the store saved
    them (the join of the last parts is a suffix of the whole; UTF-8 encodes each character
    alone)."""
    last: list[str] = []
    size = 0
    for part in reversed(parts):
        last.append(part)
        size += len(part) + len(separator)
        if size >= KEPT_BYTES:
            break
    return encode_text([separator.join(reversed(last))[-KEPT_BYTES:]], "")
