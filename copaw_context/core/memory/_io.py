"""Durable file writes for the memory files: locks, atomic replaces and locked appends.

Private to :mod:`copaw_context.core.memory`. Every lock is a fresh :class:`filelock.FileLock`
object (its own descriptor), so two holders in one process exclude each other exactly like two
processes do, and it may be released from another thread than the one that acquired it (an
``asyncio.to_thread`` call may run anywhere).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import filelock

from .._confine import check_inside, open_append_inside
from .._offload_write import fsync_directory

__all__ = [
    "acquire_async",
    "append_bytes",
    "atomic_write",
    "file_lock",
    "fsync_directory",
    "locked",
]

logger = logging.getLogger("copaw_context")


def file_lock(path: Path, timeout: float) -> filelock.FileLock:
    """A new inter-process lock on ``path`` (its folder is created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return filelock.FileLock(str(path), timeout=timeout, thread_local=False)


@contextlib.contextmanager
def locked(path: Path, timeout: float) -> Iterator[None]:
    """Hold a new lock on ``path`` for the ``with`` block (blocking, in the calling thread)."""
    with file_lock(path, timeout):
        yield


async def acquire_async(lock: filelock.FileLock, wait_seconds: float, poll: float = 0.05) -> None:
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
    are kept. The temp file is removed when anything fails.
    """
    if workspace is not None:
        check_inside(path.parent, workspace, write=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        mode = None
    try:
        with open(temp, "xb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        try:
            temp.unlink(missing_ok=True)
        except OSError as error:
            logger.warning("memory: could not remove temp file %s: %s", temp, error)
        raise
    fsync_directory(path.parent)


def append_bytes(
    path: Path, payload: bytes, header: bytes = b"", workspace: Path | None = None
) -> None:
    """Append ``payload`` to ``path`` (its lock held) with one write and ``fsync``.

    A new or empty file gets ``header`` first; a file whose last line is unterminated gets a
    newline first. A failed write is cut back to the old size, so nothing half-written stays.
    """
    if workspace is not None:
        check_inside(path.parent, workspace, write=True)
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
