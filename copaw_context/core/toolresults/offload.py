"""Offload store: full copies of truncated tool results, with a time-to-live.

Every oversized tool result is saved whole as ``<directory>/<uuid4 hex>.txt`` before its
in-context copy is cut; the truncation notice names that file. Unlike the reference
(TTL only at ``close()``, deleting any ``*.txt``), :meth:`OffloadStore.cleanup` runs
periodically, deletes only files this store could have written, never follows symlinks
and never deletes a file that the context still names, by notice or as a bare path
(summaries do that); it refreshes the modification time of such files so that other
processes sharing the directory, which cannot see this context, keep them too. Each
session also records the names its context references in a manifest
(:mod:`.offload_refs`, :meth:`OffloadStore.record_references`); a cleanup
keeps every file a live manifest names, so sessions sharing the store (one workspace, many
chats) never lose the files another session's context still names. What names a file of
the store is :mod:`.offload_names`; the sweep of the local files is :mod:`._offload_sweep`.

Given a ``workspace``, the store reaches its files through the workspace's file store
(:class:`~copaw_context.core.store.files.FileStore`, :attr:`OffloadStore.files`; the step
context's own, else one of its own): a save is ``put_blob``, a tail not in memory is read
from ``open_blob``, a cleanup is ``expire_blobs``, and the files, their bytes, names and
notices are those the file code writes. Without a workspace, for a directory outside it (or
not a key of plain names) and for a save in an encoding other than ``"utf-8"``, the store
runs that file code itself (:mod:`._offload_write`, :mod:`._offload_sweep`), exactly as
before. With a PostgreSQL DSN the shared store comes first (:attr:`OffloadStore.blobs`).
"""

from __future__ import annotations

import asyncio
import codecs
import logging
import math
import os
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from uuid import uuid4

from copaw_context.core.errors import ConfigError
from copaw_context.core.store.files import FileStore
from copaw_context.core.store.lines import folder_of
from copaw_context.core.store.protocol import StoreError
from copaw_context.core.toolresults import offload_refs
from copaw_context.core.toolresults._offload_files import (
    FileBlobs,
    OffloadBlobs,
    blob_starts_with,
    read_tail_of,
    starts_with,
)
from copaw_context.core.toolresults._offload_files import read_tail as _read_tail
from copaw_context.core.toolresults._offload_files import referenced_names as _referenced_names
from copaw_context.core.toolresults._offload_sweep import sweep_files
from copaw_context.core.toolresults._offload_write import INLINE_CHARS, SavedText, write_atomically
from copaw_context.core.toolresults._saved_tails import forget_tail, known_tail
from copaw_context.core.toolresults.offload_names import OWN_FILE
from copaw_context.core.workspace.safe_open import ReadFailure

__all__ = [
    "INLINE_CHARS",
    "OffloadStore",
    "SavedText",
]

logger = logging.getLogger("copaw_context")

_SECONDS_PER_DAY = 86400.0
_MAX_EARLY_SAVES = 1024


def _check_non_negative(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(name, value, "expected a finite number >= 0")
    if value < 0:
        raise ConfigError(name, value, "expected a finite number >= 0")
    return float(value)


def _retrieve(task: asyncio.Future[SavedText]) -> None:
    """Mark the outcome of an early save as seen (claim_early reports a failure)."""
    if not task.cancelled():
        task.exception()


class OffloadStore:
    """Saves full tool outputs to one directory and expires them after ``retention_days``."""

    def __init__(
        self,
        directory: Path,
        retention_days: float,
        *,
        cleanup_interval_seconds: float = 3600.0,
        clock: Callable[[], float] = time.time,
        workspace: Path | None = None,
        manifest_retention_days: float = 90.0,
        files: FileBlobs | None = None,
    ) -> None:
        self._directory = Path(directory).expanduser().absolute()
        self._workspace = workspace
        self._retention_seconds = (
            _check_non_negative("retention_days", retention_days) * _SECONDS_PER_DAY
        )
        self._cleanup_interval = _check_non_negative(
            "cleanup_interval_seconds", cleanup_interval_seconds
        )
        self._manifest_seconds = max(
            self._retention_seconds,
            _check_non_negative("manifest_retention_days", manifest_retention_days)
            * _SECONDS_PER_DAY,
        )
        self._clock = clock
        self._last_cleanup: float | None = None
        self._early: dict[str, asyncio.Future[SavedText]] = {}
        self._manifests = offload_refs.ManifestWriter(self._directory, workspace, clock)
        self._manifests.shared = self._share_manifest
        self.blobs: OffloadBlobs | None = None
        """The shared workspace store's blobs (:mod:`.store_blobs`, a PostgreSQL DSN);
        ``None``: the workspace's files only."""
        if files is None and workspace is not None:
            files = FileStore(workspace, clock=clock)
        self.files: FileBlobs | None = files
        """The workspace's file store (``files=``, else one over ``workspace``; ``None``
        without a workspace): the local files are reached through it (:meth:`_folder`)."""

    async def _share_manifest(self, session_id: str, names: frozenset[str], now: float) -> None:
        if self.blobs is not None:  # the cleanups of other replicas keep these names too
            await self.blobs.record_manifest(self._directory, session_id, names, now)

    @property
    def directory(self) -> Path:
        """The absolute directory holding the offloaded files."""
        return self._directory

    def _folder(self) -> tuple[FileBlobs, str] | None:
        """:attr:`files` and the key of this store's directory in it (``store/lines.py``
        :func:`~copaw_context.core.store.lines.folder_of`); ``None`` (the file code runs
        here) without a workspace, for a file store of another workspace, or a directory
        outside the workspace or not a key of plain names."""
        return folder_of(self.files, self._workspace, self._directory)

    async def save(self, text: str, encoding: str = "utf-8") -> Path:
        """Write ``text`` atomically to a new file and return its absolute path.

        Lone surrogates are saved as U+FFFD, exactly as :func:`truncate_text_output` shows
        them (see :func:`scrub_surrogates`). Raises ``OSError`` if the file cannot be
        written (no temp file is left behind) and ``LookupError`` for an unknown
        ``encoding``. Other characters the encoding cannot represent are written as
        backslash escapes rather than failing the save.
        """
        return (await self.save_parts((text,), encoding=encoding)).path

    async def save_parts(
        self, parts: Sequence[str], *, separator: str = "\n", encoding: str = "utf-8"
    ) -> SavedText:
        """Save ``separator.join(parts)`` like :meth:`save`, without joining them.

        The text is encoded and written chunk by chunk (memory does not grow with it; it is
        never copied whole), its newlines counted on the way: in a worker thread, or on the
        event loop for a text of at most ``INLINE_CHARS`` characters (a write to the page
        cache and a rename, no sync: cheaper than the hop to a thread, which a busy loop
        can hold back for milliseconds). The file
        is renamed into place before this returns (whole and readable, so a notice naming
        it can never outlive it in a crash of the process); its fsync and the directory's
        run in the background, group-committed (:mod:`copaw_context.core.workspace.durable`),
        and whatever makes a reference to it durable awaits them first. Returns the path,
        line count and size.
        """
        codecs.lookup(encoding)  # LookupError here, before any file is created
        if self.blobs is not None and encoding == "utf-8":
            stored = await self.blobs.save(self._directory, parts, separator)
            if stored is not None:
                return stored  # else (the store is down) the local file, as without one
        local = self._folder() if encoding == "utf-8" else None
        if local is not None:  # the workspace's file store: the same writer, the same file
            files, folder = local
            try:
                info = await files.put_blob(folder, parts, separator)
            except StoreError as error:  # as the writer raised it (OSError: nothing left)
                raise (error.__cause__ or error) from None
            return SavedText(self._directory / info.key.rpartition("/")[2], info.lines, info.nbytes)
        # Never through a link out of the workspace, even one swapped in after the check.
        args = (self._directory, tuple(parts), separator, encoding, self._workspace)
        if sum(len(part) for part in parts) <= INLINE_CHARS:
            return write_atomically(*args)
        return await asyncio.to_thread(write_atomically, *args)

    def save_early(self, parts: Sequence[str]) -> str:
        """Start :meth:`save_parts` in the background; return a token for :meth:`claim_early`.

        For a text likely to be cut later: its save runs while the agent goes on, so the
        later cut finds it written instead of waiting for the disk.
        """
        if len(self._early) >= _MAX_EARLY_SAVES:  # never claimed (compacted first): forget
            for old in [t for t, task in self._early.items() if task.done()]:
                del self._early[old]
        token = uuid4().hex
        task = asyncio.ensure_future(self.save_parts(parts))
        task.add_done_callback(_retrieve)  # a failed save never claimed is not an error log
        self._early[token] = task
        return token

    async def claim_early(self, token: object) -> SavedText | None:
        """The finished save started by :meth:`save_early` (None if unknown or failed)."""
        task = self._early.pop(token, None) if isinstance(token, str) else None
        if task is None:
            return None
        try:
            return await task
        except (OSError, ValueError) as exc:
            logger.warning("copaw-context: an early save to %s failed: %s", self._directory, exc)
            return None

    async def drain(self) -> None:
        """Wait for the early saves still running (they stay claimable) and the manifests
        still being written."""
        await asyncio.gather(*self._early.values(), return_exceptions=True)
        await self.settle()

    def owns(self, path: str | Path) -> bool:
        """True only for ``<32 lowercase hex>.txt`` directly inside this store's directory."""
        return self._ownership()(path)

    def _ownership(self) -> Callable[[str | Path], bool]:
        """:meth:`owns` for a batch of paths: the store's directory and each distinct parent
        are resolved once (a compaction checks a thousand files of one folder)."""
        try:
            directory: Path | None = self._directory.resolve()
        except (OSError, ValueError, RuntimeError):
            directory = None
        parents: dict[Path, bool] = {}

        def owns(path: str | Path) -> bool:
            candidate = Path(path).expanduser()
            if directory is None or not OWN_FILE.fullmatch(candidate.name):
                return False
            try:
                parent = candidate.absolute().parent
                if parent not in parents:
                    parents[parent] = parent.resolve() == directory
                return parents[parent]
            except (OSError, ValueError, RuntimeError):
                return False

        return owns

    async def starts_with(self, path: Path, head: bytes) -> bool | None:
        """Whether our file ``path`` (see :meth:`owns`) begins with ``head``, ``None`` when
        there is no such file here: through :attr:`files` (``open_blob``: a link, or a
        path out of the workspace, is not ours), else the file opened here."""
        local = self._folder()
        if local is None:
            return await asyncio.to_thread(starts_with, path, head)
        files, folder = local
        real = self._directory.resolve() / path.name
        return await asyncio.to_thread(blob_starts_with, files, f"{folder}/{path.name}", real, head)

    async def read_tail(self, path: str | Path, max_bytes: int = 4096) -> str | None:
        """The last ``max_bytes`` (whole lines) of one of our own files, else None.

        Errors are printed last; the compactor sees them even when the excerpt in the
        context only holds the head of the output.
        """
        return (await self.read_tails([path], max_bytes))[0]

    async def read_tails(
        self, paths: Sequence[str | Path], max_bytes: int = 4096
    ) -> list[str | None]:
        """:meth:`read_tail` of several files: the ends this process wrote to this store are
        in memory (:mod:`._saved_tails`); the others are read in one worker-thread hop."""
        tails = [self.known_tail(p, max_bytes) for p in paths]
        missing = [i for i, tail in enumerate(tails) if tail is None]
        local = self._folder()

        def read_one(path: Path) -> str | None:
            if local is None:
                return _read_tail(path, max_bytes)
            files, folder = local
            try:  # through the workspace's file store: one confined open
                handle, _ = files.open_blob(f"{folder}/{path.name}")
                with handle:
                    return read_tail_of(handle, max_bytes)
            except (OSError, ReadFailure, StoreError):
                return None

        def read() -> list[str | None]:
            owns = self._ownership()
            return [read_one(Path(paths[i])) if owns(paths[i]) else None for i in missing]

        if missing:
            for i, tail in zip(missing, await asyncio.to_thread(read), strict=True):
                tails[i] = tail
        if self.blobs is not None:  # not in the files: in the workspace store
            await self.blobs.fill_tails(self._directory, paths, tails, self.owns, max_bytes)
        return tails

    def known_tail(self, path: str | Path, max_bytes: int = 4096) -> str | None:
        """The tail of ``path`` from memory: only of a file this process wrote (its key is
        the path the writer returned) directly in this store's directory."""
        text = str(path)
        parent, _, name = text.rpartition(os.sep)
        if parent != str(self._directory) or not OWN_FILE.fullmatch(name):
            return None
        return known_tail(text, max_bytes)

    async def cleanup(self, referenced: Iterable[str | Path] = ()) -> list[Path]:
        """Delete expired files of this store that the context does not reference; return them.

        ``referenced`` holds file names (see :func:`.offload_names.referenced_offload_names`)
        or paths (see :func:`.offload_names.referenced_offload_paths`); an own file is kept
        when its name is among them. Referenced own files get their modification time set to
        now, so that another process's cleanup keeps them for another retention period. Also
        deletes this store's temp files older than one hour (left by a crash). Never raises
        for a single file: failures are logged and that file is skipped.
        """
        referenced_items = list(referenced)
        local = self._folder()
        if local is not None:  # the workspace's file store sweeps the folder (once)
            files, folder = local
            gone_keys = await files.expire_blobs(
                folder,
                self._retention_seconds,
                referenced_items,
                manifest_age_seconds=self._manifest_seconds,
                clock=self._clock,
            )
            removed = [self._directory / key.rpartition("/")[2] for key in gone_keys]
        else:
            removed = await asyncio.to_thread(
                sweep_files,
                self._directory,
                self._workspace,
                referenced_items,
                clock=self._clock,
                retention_seconds=self._retention_seconds,
                manifest_seconds=self._manifest_seconds,
            )
        if self.blobs is not None:
            ages = (self._manifest_seconds, self._clock())
            keep = _referenced_names(referenced_items)
            gone = await self.blobs.expire(self._directory, self._retention_seconds, keep, ages)
            removed += gone
            for path in gone:
                forget_tail(str(path))
        return removed

    async def maybe_cleanup(self, referenced: Callable[[], Iterable[str | Path]]) -> list[Path]:
        """Run :meth:`cleanup` if it never ran or ``cleanup_interval_seconds`` have passed.

        ``referenced`` is called only when a cleanup actually runs. Returns the removed paths
        (``[]`` when throttled).
        """
        now = self._clock()
        previous = self._last_cleanup
        # A clock that went backwards counts as "interval elapsed" rather than stalling.
        if previous is not None and 0 <= now - previous < self._cleanup_interval:
            return []
        self._last_cleanup = now  # set before awaiting so concurrent callers do not also run
        try:
            referenced_items = list(referenced())
        except BaseException:
            self._last_cleanup = previous
            raise
        return await self.cleanup(referenced_items)

    async def record_references(self, session_id: str, names: Iterable[str]) -> None:
        """Record the offload names one session's context references (its manifest), so
        that the cleanups of other sessions sharing this store keep them. Rewritten when
        they change, touched at most hourly otherwise; failures are logged, never raised.

        The write runs in the background, off the step (:class:`~.offload_refs.
        ManifestWriter`): :meth:`settle` waits for it, and a model call settles before it
        returns, so the manifest is on disk when a reply ends."""
        self._manifests.record(session_id, names)

    async def settle(self) -> None:
        """Wait for the manifests queued by :meth:`record_references` to be written (and the
        workspace store's sync, when the offload goes through one)."""
        await self._manifests.settle()
        if self.blobs is not None:
            await self.blobs.sync()
