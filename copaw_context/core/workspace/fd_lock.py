"""Inter-process locks held on a descriptor: the lock file is never opened by name.

The lock file is opened ONCE, relative to its folder held open by descriptor (``dir_fd``)
with ``O_NOFOLLOW``, and locked with ``flock`` on that descriptor; a wait polls the same
descriptor. So a folder swapped for a symbolic link out of the workspace after its check
never gets a lock file: there is no name left to follow. (``filelock`` takes a name and,
from version 4, resolves its folder, ``/proc/self/fd/N`` too, to a path it opens by name
at every attempt: that is the gap this closes.)

``flock`` locks the same way as :class:`filelock.FileLock` on Unix (the whole file, per
open file description), so these locks exclude filelock's on the same file, in other
processes and in this one alike; a timeout raises :class:`filelock.Timeout`.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import filelock

from copaw_context.core.workspace.confine import refusal

__all__ = ["DescriptorLock", "lock_at", "open_lock_at"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_LOCK_FLAGS = (
    os.O_RDWR | os.O_CREAT | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
)
_LINK_ERRNOS = {errno.ELOOP, errno.EMLINK, getattr(errno, "EFTYPE", errno.ELOOP)}
_BUSY_ERRNOS = {errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES}
POLL_SECONDS = 0.05
"""How often a waiting lock tries again (filelock's default)."""


def open_lock_at(dir_fd: int | None, path: Path, workspace: Path | None) -> int:
    """A descriptor of the lock file ``path`` in the folder ``dir_fd`` (``path`` by name
    when ``None``; created if missing, its content never touched); a lock file that is a
    link is refused with an error naming where it leads (the system alone says "too many
    levels of symbolic links")."""
    name = path if dir_fd is None else path.name
    try:
        return os.open(name, _LOCK_FLAGS, 0o666, dir_fd=dir_fd)
    except OSError as error:
        if error.errno in _LINK_ERRNOS and workspace is not None:
            raise refusal(path, workspace) from None
        raise


class DescriptorLock:
    """A lock on the file ``opener()`` opens (at each acquire that is not a re-entry; the
    descriptor is closed at the last release or when the acquire fails). Re-entrant like
    :class:`filelock.FileLock` with ``thread_local=False``; may be released from another
    thread than the one that acquired it."""

    def __init__(self, opener: Callable[[], int], name: str, timeout: float) -> None:
        self._opener, self._name, self._timeout = opener, name, timeout
        self._fd: int | None = None
        self._count = 0
        self._guard = threading.Lock()

    @property
    def is_locked(self) -> bool:
        return self._count > 0

    def acquire(self, timeout: float | None = None) -> None:
        """Wait up to ``timeout`` seconds (the lock's own when ``None``; forever when < 0;
        one attempt when 0); :class:`filelock.Timeout` when still held by another. The file
        is opened once per acquire; every attempt locks that same descriptor."""
        wait = self._timeout if timeout is None else timeout
        deadline = time.monotonic() + wait
        fd: int | None = None
        try:
            while True:
                with self._guard:
                    if self._count:  # already held through this object: re-entered
                        self._count += 1
                        return
                    if fd is None:
                        fd = self._opener()
                    if _locked(fd):
                        self._fd, self._count, fd = fd, 1, None
                        return
                left = deadline - time.monotonic()
                if wait >= 0 and left <= 0:
                    raise filelock.Timeout(self._name)
                time.sleep(POLL_SECONDS if wait < 0 else min(POLL_SECONDS, left))
        finally:
            if fd is not None:
                os.close(fd)

    def release(self) -> None:
        with self._guard:
            if not self._count:
                return
            self._count -= 1
            if self._count or self._fd is None:
                return
            fd, self._fd = self._fd, None
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)  # closing releases it anyway

    def __enter__(self) -> DescriptorLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _locked(fd: int) -> bool:
    """Whether ``flock`` took the lock on ``fd`` now (False: another holds it)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        if error.errno in _BUSY_ERRNOS:
            return False
        raise
    return True


@contextlib.contextmanager
def lock_at(
    dir_fd: int | None, path: Path, workspace: Path | None, timeout: float
) -> Iterator[None]:
    """Hold the lock file ``path`` in the open folder ``dir_fd`` for the ``with`` block
    (:func:`open_lock_at`, then :class:`DescriptorLock`)."""
    with DescriptorLock(lambda: open_lock_at(dir_fd, path, workspace), str(path), timeout):
        yield
