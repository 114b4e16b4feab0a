"""Files swapped while read_file reads them: the flipping threads and the FIFO readers' release."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = ["flipper", "flipping", "release_fifo_readers"]


@contextlib.contextmanager
def flipping(flip: Callable[[], None]) -> Iterator[None]:
    """Run ``flip`` over and over in a thread for the duration of the with-block."""
    stop = threading.Event()
    errors: list[BaseException] = []

    def loop() -> None:
        try:
            while not stop.is_set():
                flip()
        except BaseException as exc:  # surfaced below: a broken flipper proves nothing
            errors.append(exc)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
    assert not errors, errors


def release_fifo_readers(path: Path) -> None:
    """Unblock any reader stuck opening the FIFO at ``path`` (a writer's open frees it)."""
    for _ in range(100):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno in (errno.ENXIO, errno.ENOENT):  # no reader waiting / not a FIFO now
                return
            raise
        os.close(fd)


_AT_FDCWD = -100


_RENAME_EXCHANGE = 2


def _exchanger() -> Callable[[Path, Path], None]:
    """Swap two directory entries: atomically with Linux ``renameat2``, else with renames."""
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)

    def with_renames(a: Path, b: Path) -> None:
        parked = a.with_name(a.name + ".parked")
        os.rename(a, parked)
        os.rename(b, a)
        os.rename(parked, b)

    if renameat2 is None:
        return with_renames

    def atomically(a: Path, b: Path) -> None:
        if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE):
            err = ctypes.get_errno()
            if err not in (errno.EINVAL, errno.ENOSYS):
                raise OSError(err, os.strerror(err), str(a))
            with_renames(a, b)  # a file system without RENAME_EXCHANGE

    return atomically


def flipper(target: Path, other: Path) -> Callable[[], None]:
    """A flip: ``target`` and ``other`` trade places (so ``target`` alternates between them)."""
    exchange = _exchanger()
    return lambda: exchange(target, other)
