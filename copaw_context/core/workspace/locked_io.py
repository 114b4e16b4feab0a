"""Durable file writes: inter-process locks, atomic replaces and locked appends.

Used by the memory files and the file workspace store (:mod:`copaw_context.core.store.files`).
Every lock is a fresh object with its own descriptor (in a workspace a :class:`ConfinedLock`,
whose lock file is never opened by name; without one a :class:`filelock.FileLock`), so two
holders in one process exclude each other exactly like two processes do, and it may be
released from another thread than the one that acquired it (an ``asyncio.to_thread`` call
may run anywhere).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

import filelock

from copaw_context.core.workspace.confine import check_inside
from copaw_context.core.workspace.confine_write import (
    open_append_inside,
    open_dir,
    replace_at,
    sync_dir,
    writable_dir,
)
from copaw_context.core.workspace.fd_lock import DescriptorLock, open_lock_at

__all__ = [
    "AnyLock",
    "ConfinedLock",
    "acquire_async",
    "append_bytes",
    "atomic_write",
    "atomic_write_chunks",
    "file_lock",
    "locked",
]

logger = logging.getLogger("copaw_context")


class ConfinedLock(DescriptorLock):
    """An inter-process lock whose lock file is opened through its folder held open by
    descriptor (reached from the workspace root without following links) and locked on its
    own descriptor (:mod:`.fd_lock`), so a folder swapped for a link never puts the lock
    file outside the workspace, not even while the lock is waited for."""

    def __init__(self, path: Path, timeout: float, workspace: Path) -> None:
        super().__init__(self._open, str(path), timeout)
        self._path, self._workspace = path, workspace

    def _open(self) -> int:
        dir_fd = open_dir(self._path.parent, self._workspace)
        try:
            return open_lock_at(dir_fd, self._path, self._workspace)
        finally:
            os.close(dir_fd)


AnyLock = filelock.FileLock | ConfinedLock


def file_lock(path: Path, timeout: float, workspace: Path | None = None) -> AnyLock:
    """A new inter-process lock on ``path`` (its folder is created); with ``workspace``, one
    confined to it (:class:`ConfinedLock`)."""
    if workspace is not None:
        check_inside(path.parent, workspace, write=True)
        return ConfinedLock(path, timeout, workspace)
    path.parent.mkdir(parents=True, exist_ok=True)
    return filelock.FileLock(str(path), timeout=timeout, thread_local=False)


@contextlib.contextmanager
def locked(path: Path, timeout: float, workspace: Path | None = None) -> Iterator[None]:
    """Hold a new lock on ``path`` for the ``with`` block (blocking, in the calling thread)."""
    with file_lock(path, timeout, workspace):
        yield


async def acquire_async(lock: AnyLock, wait_seconds: float, poll: float = 0.05) -> None:
    """Acquire ``lock`` without blocking the event loop, polling; cancel-safe (a cancelled
    wait never leaves the lock held). Raises :class:`filelock.Timeout` after ``wait_seconds``."""
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            lock.acquire(timeout=0)
            return
        except filelock.Timeout:
            if time.monotonic() >= deadline:
                raise
        await asyncio.sleep(poll)


def atomic_write(path: Path, data: bytes, workspace: Path | None = None) -> None:
    """Replace ``path`` with ``data`` all at once: temp file, ``fsync``, ``os.replace``.

    Readers see the old file or the new one, never a part. An existing file's permission bits
    are kept. The temp file is removed when anything fails. With ``workspace``, the folder is
    opened by descriptor from the workspace root (never through a link, even one swapped in
    after the check): :class:`~copaw_context.core.workspace.confine.OutsideWorkspaceError`.
    """
    atomic_write_chunks(path, (data,), workspace)


def atomic_write_chunks(path: Path, chunks: Iterable[bytes], workspace: Path | None = None) -> None:
    """:func:`atomic_write` of the bytes ``chunks`` yields, written one at a time (so only one
    is in memory); an error raised by ``chunks`` removes the temp file too."""
    temp = f".{path.name}.{uuid.uuid4().hex}.tmp"

    def write(handle: BinaryIO) -> None:
        for chunk in chunks:
            handle.write(chunk)

    with writable_dir(path.parent, workspace) as dir_fd:
        replace_at(dir_fd, path.name, temp, write)
        sync_dir(dir_fd)


def append_bytes(
    path: Path, payload: bytes, header: bytes = b"", workspace: Path | None = None
) -> None:
    """Append ``payload`` to ``path`` (its lock held) with one write and ``fsync``.

    A new or empty file gets ``header`` first; a file whose last line is unterminated gets a
    newline first. A failed write is cut back to the old size, so nothing half-written stays.
    """
    if workspace is None:
        path.parent.mkdir(parents=True, exist_ok=True)
    opened: int | Path = path if workspace is None else open_append_inside(path, workspace)
    with open(opened, "a+b", buffering=0) as handle:
        size = handle.seek(0, os.SEEK_END)
        if size == 0:
            payload = header + payload
        else:
            handle.seek(size - 1)
            if handle.read(1) != b"\n":
                payload = b"\n" + payload
        try:
            view = memoryview(payload)
            while view:
                written = handle.write(view)
                if not written:
                    raise OSError(f"write returned {written!r} with {len(view)} bytes left")
                view = view[written:]
            os.fsync(handle.fileno())
        except BaseException:
            with contextlib.suppress(OSError):
                handle.truncate(size)
                os.fsync(handle.fileno())
            raise
