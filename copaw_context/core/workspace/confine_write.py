"""Race-free writes inside the workspace: folders opened by descriptor from the workspace root.

A check by name (:func:`~copaw_context.core.workspace.confine.check_inside`) gives the clear error
first. Then the target folder is opened component by component from the workspace root with
``O_DIRECTORY | O_NOFOLLOW`` (``dir_fd``), so a folder swapped for a symbolic link after the
check makes the open fail instead of being followed. Temp files are created (``O_EXCL``),
renamed and fsynced relative to that descriptor (or, ``deferred``, synced in the background
by :mod:`.durable`); appends open with ``O_NOFOLLOW`` and are
checked with ``fstat`` (a regular file with one link). Nothing is ever created through a link.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO, TypeVar

from copaw_context.core.workspace.confine import OutsideWorkspaceError, check_inside, refusal
from copaw_context.core.workspace.durable import defer_sync

__all__ = [
    "confined_dir",
    "lock_name_at",
    "name_at",
    "open_append_at",
    "open_append_inside",
    "open_dir",
    "replace_at",
    "sync_dir",
    "writable_dir",
]

_T = TypeVar("_T")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC
_NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
_APPEND_FLAGS = (
    os.O_RDWR | os.O_CREAT | os.O_APPEND | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | _CLOEXEC
)
_LOCK_FLAGS = os.O_RDWR | os.O_CREAT | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | _CLOEXEC
_LINK_ERRNOS = {errno.ELOOP, errno.ENOTDIR, errno.EMLINK, getattr(errno, "EFTYPE", errno.ELOOP)}


def _swapped(path: Path, workspace: Path, what: str) -> OutsideWorkspaceError:
    return OutsideWorkspaceError(
        f"{path} {what} while copaw-context was writing to it (checked a moment before), so "
        f"it may now lead outside the workspace {workspace}; nothing was written there. "
        "Replace the link with a real folder or file inside the workspace."
    )


def open_dir(directory: Path, workspace: Path, *, create: bool = True) -> int:
    """A descriptor of ``directory`` reached from the workspace root without following any
    link (missing folders are created when ``create``); :class:`OutsideWorkspaceError` when
    a folder on the way is a link or not a folder, :class:`FileNotFoundError` when missing."""
    root = Path(workspace).resolve()
    real = Path(directory).resolve()
    if not real.is_relative_to(root):
        raise refusal(Path(directory), workspace)
    if create:  # the workspace itself is the user's own path
        root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)
    walked = root
    try:
        for name in real.relative_to(root).parts:
            walked = walked / name
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o777, dir_fd=fd)
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as error:
                if error.errno in _LINK_ERRNOS:
                    raise _swapped(walked, workspace, "became a link or a file") from None
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextlib.contextmanager
def confined_dir(directory: Path, workspace: Path, *, create: bool = True) -> Iterator[int]:
    """:func:`open_dir` after the check by name, closed at the end of the ``with`` block."""
    check_inside(directory, workspace, write=True)
    fd = open_dir(directory, workspace, create=create)
    try:
        yield fd
    finally:
        os.close(fd)


def name_at(dir_fd: int | None, path: Path) -> str:
    """``path`` named through the open folder ``dir_fd`` (``/proc/self/fd/N/name``) when the
    system has it, so that a folder swapped for a link cannot send the file elsewhere; for
    code that needs a name (lock files, SQLite)."""
    if dir_fd is not None and os.path.isdir(f"/proc/self/fd/{dir_fd}"):
        return f"/proc/self/fd/{dir_fd}/{path.name}"
    return str(path)


def lock_name_at(dir_fd: int | None, path: Path, workspace: Path | None) -> str:
    """:func:`name_at` for a lock file, made first (or checked) without following a link:
    a lock file that is a link out is refused with an error naming where it leads (the
    lock library would only say "too many levels of symbolic links").

    Not enough for :class:`filelock.FileLock`: from version 4 it resolves the folder of the
    name (``/proc/self/fd/N`` too) and opens the file by that path at each attempt, so a
    folder swapped for a link while it waits gets the lock file. Locks use
    :func:`copaw_context.core.workspace.fd_lock.lock_at` instead."""
    if dir_fd is not None and workspace is not None:
        try:
            fd = os.open(path.name, _LOCK_FLAGS, 0o666, dir_fd=dir_fd)
        except OSError as error:
            if error.errno in _LINK_ERRNOS:
                raise refusal(path, workspace) from None
            raise
        os.close(fd)
    return name_at(dir_fd, path)


@contextlib.contextmanager
def writable_dir(directory: Path, workspace: Path | None, *, create: bool = True) -> Iterator[int]:
    """:func:`confined_dir` with a workspace; without one, ``directory`` by name (created
    when ``create``)."""
    if workspace is not None:
        with confined_dir(directory, workspace, create=create) as fd:
            yield fd
        return
    if create:
        directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)
    try:
        yield fd
    finally:
        os.close(fd)


def sync_dir(dir_fd: int) -> None:
    """Persist the renames in the folder ``dir_fd``; best effort."""
    with contextlib.suppress(OSError):
        os.fsync(dir_fd)


def replace_at(
    dir_fd: int,
    name: str,
    temp: str,
    write: Callable[[BinaryIO], _T],
    *,
    sync: Callable[[int], None] = os.fsync,
    keep_mode: bool = True,
    deferred: bool = False,
) -> _T:
    """Write a new file ``temp`` in the folder ``dir_fd`` with ``write``, sync it and rename it
    to ``name`` there (all by descriptor). An existing file's permission bits are kept; the
    temp file is removed when anything fails. Returns what ``write`` returned.

    ``deferred``: the file is renamed unsynced (whole and readable at once) and its sync and
    the folder's are group-committed in the background (:mod:`.durable`); whatever depends
    on it being on disk calls :func:`~copaw_context.core.workspace.durable.flush` first."""
    mode = None
    if keep_mode:
        with contextlib.suppress(OSError):
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            mode = stat.S_IMODE(info.st_mode) if stat.S_ISREG(info.st_mode) else None
    fd = os.open(temp, _NEW_FLAGS, 0o666, dir_fd=dir_fd)
    kept: int | None = None
    try:
        try:
            stream = os.fdopen(fd, "wb")
        except BaseException:
            os.close(fd)
            raise
        with stream as handle:
            result = write(handle)
            handle.flush()
            if deferred:
                kept = os.dup(handle.fileno())
            else:
                sync(handle.fileno())
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        if kept is not None:
            os.close(kept)
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=dir_fd)
        raise
    if kept is not None:
        defer_sync(kept, os.dup(dir_fd))
    return result


def open_append_at(dir_fd: int, name: str, path: Path, workspace: Path) -> int:
    """A descriptor of ``name`` in the folder ``dir_fd`` opened for appending (created if
    missing); a symbolic link, a hard link or anything but a regular file is refused."""
    try:
        fd = os.open(name, _APPEND_FLAGS, 0o666, dir_fd=dir_fd)
    except OSError as error:
        if error.errno in _LINK_ERRNOS:
            raise refusal(path, workspace) from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OutsideWorkspaceError(
                f"{path} is not a regular file; copaw-context only appends to regular files. "
                "Remove it so that a new file can be created."
            )
        if info.st_nlink > 1:
            raise OutsideWorkspaceError(
                f"{path} is a hard link shared with another file (maybe outside the workspace "
                f"{workspace}); copaw-context does not append to it. Replace it with a real "
                "file inside the workspace."
            )
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_append_inside(path: Path, workspace: Path) -> int:
    """A descriptor of ``path`` opened for appending, confined to the workspace (see
    :func:`open_append_at`); no folder on the way is followed if it became a link."""
    with confined_dir(path.parent, workspace) as dir_fd:
        return open_append_at(dir_fd, path.name, path, workspace)
