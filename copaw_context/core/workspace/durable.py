"""Group commit off the step path: the fsyncs of renamed files, batched in a background thread.

A writer that must not wait for the disk writes its temp file, renames it into place (the
file is whole and readable at once, and survives ``kill -9``: the page cache has it) and
hands duplicates of the file's and its folder's descriptors to :func:`defer_sync`. A
background thread takes everything handed over since its last batch, syncs each file's data
(``fdatasync``), then each folder once (the renames), and closes the descriptors.

Whatever depends on such a file being on disk calls the barrier first: :func:`flush`
(blocking, for code already in a worker thread) or ``await`` :func:`durable` (off the event
loop; returns at once when nothing is pending). The dialog archive's append, the compaction
commit, the reply's end (the host saves its state after it) and the engine's close do. A
sync that fails is logged (the file is written and readable; only its durability is in
doubt). At interpreter exit the pending syncs are completed; a forked child starts empty.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import threading

__all__ = ["MAX_PENDING", "defer_sync", "durable", "flush", "pending"]

logger = logging.getLogger("copaw_context")

MAX_PENDING = 256
"""Files handed over and not yet synced above which :func:`defer_sync` waits for a batch
(the descriptors it holds stay bounded)."""


def _sync_data(fd: int) -> None:
    """``fdatasync`` where the system has it, else ``fsync`` (looked up at each call)."""
    sync = getattr(os, "fdatasync", None) or os.fsync
    sync(fd)


def _sync_folder(fd: int) -> None:
    """Persist the renames in the folder ``fd``; best effort (not every system syncs
    folders)."""
    with contextlib.suppress(OSError):
        os.fsync(fd)


class _GroupCommit:
    """Tickets in order: :meth:`flush` returns once every ticket issued before it is synced."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._queue: list[tuple[int, int]] = []
        self._issued = 0
        self._done = 0
        self._thread: threading.Thread | None = None

    def defer(self, file_fd: int, dir_fd: int) -> None:
        with self._condition:
            self._queue.append((file_fd, dir_fd))
            self._issued += 1
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="copaw-context-group-commit", daemon=True
                )
                self._thread.start()
            self._condition.notify_all()
            while self._issued - self._done > MAX_PENDING:
                self._condition.wait()

    def pending(self) -> int:
        with self._condition:
            return self._issued - self._done

    def flush(self) -> None:
        with self._condition:
            wanted = self._issued
            while self._done < wanted:
                self._condition.wait()

    def _run(self) -> None:
        while True:
            with self._condition:
                while not self._queue:
                    self._condition.wait()
                batch, self._queue = self._queue, []
                last = self._issued
            try:
                _sync_batch(batch)
            except Exception:  # never stop syncing (the batch's descriptors are closed)
                logger.exception("copaw-context: the background sync of saved files failed")
            finally:
                with self._condition:
                    self._done = last
                    self._condition.notify_all()

    def reset(self) -> None:
        """In a forked child: nothing pending, no thread (the parent's own work is its)."""
        self._condition = threading.Condition()
        for file_fd, dir_fd in self._queue:
            _close(file_fd, dir_fd)
        self._queue = []
        self._issued = self._done = 0
        self._thread = None


def _close(*fds: int) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def _sync_batch(batch: list[tuple[int, int]]) -> None:
    """Every file's data first, then each folder once (after its renames' files)."""
    folders: dict[tuple[int, int], int] = {}
    try:
        for file_fd, dir_fd in batch:
            try:
                _sync_data(file_fd)
            except OSError as error:
                logger.error("copaw-context: a saved file could not be synced: %s", error)
            try:
                info = os.fstat(dir_fd)
                key = (info.st_dev, info.st_ino)
            except OSError:
                key = (-1, dir_fd)
            if key in folders:
                _close(dir_fd)
            else:
                folders[key] = dir_fd
        for dir_fd in folders.values():
            _sync_folder(dir_fd)
    finally:
        for file_fd, _ in batch:
            _close(file_fd)
        _close(*folders.values())


_COMMIT = _GroupCommit()


def defer_sync(file_fd: int, dir_fd: int) -> None:
    """Sync the renamed file ``file_fd`` and its folder ``dir_fd`` in the background; both
    descriptors are this module's from now on (pass duplicates) and closed when synced."""
    _COMMIT.defer(file_fd, dir_fd)


def flush() -> None:
    """Block until every file handed to :func:`defer_sync` before this call is on disk."""
    _COMMIT.flush()


async def durable() -> None:
    """:func:`flush` off the event loop; at once when nothing is pending."""
    if _COMMIT.pending():
        await asyncio.to_thread(_COMMIT.flush)


def pending() -> int:
    """Files handed over and not yet synced."""
    return _COMMIT.pending()


atexit.register(flush)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_COMMIT.reset)
