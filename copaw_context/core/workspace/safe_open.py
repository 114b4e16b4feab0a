"""Where ``read_file`` may read, and opening a file there safely against concurrent swaps.

A path is checked by name (symlinks resolved, inside the workspace or an extra root), then
opened ONCE (``O_NOFOLLOW``: a final component swapped for a symlink fails; ``O_NONBLOCK``:
a FIFO swapped in never blocks the open) and the OPENED file is checked again: it must be
a regular file and its real location (``/proc/self/fd/N`` on Linux) must still lie inside
the roots, which catches a directory on the way swapped for a symlink to elsewhere. All
reading then goes through that descriptor only. Failures are :class:`ReadFailure`, whose
text the agent sees; nothing here raises ``OSError``.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

__all__ = ["ReadFailure", "is_path_allowed", "open_inside", "resolve_inside"]

_DELETED_SUFFIX = " (deleted)"  # how Linux names an open file that was unlinked
_SWAPPED_ERRNOS = {errno.ELOOP, errno.EMLINK, getattr(errno, "EFTYPE", errno.ELOOP)}
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NOCTTY", 0)
)


class ReadFailure(Exception):
    """An agent-facing error; ``str(self)`` is the text after ``"Error: "``."""


def is_path_allowed(path: Path, workspace: Path, extra_roots: Sequence[Path]) -> bool:
    """Whether ``path`` (symlinks resolved) lies inside ``workspace`` or one of ``extra_roots``."""
    real = Path(path).resolve()
    return any(real.is_relative_to(Path(root).resolve()) for root in (workspace, *extra_roots))


def resolve_inside(raw: object, workspace: Path, roots: Sequence[Path]) -> Path:
    """The real path (symlinks resolved) of the agent's ``raw`` path, if inside ``roots``.

    ``roots[0]`` is the workspace, against which relative paths resolve.
    """
    if not isinstance(raw, str) or not raw.strip():
        raise ReadFailure(
            f"file_path {raw!r} is empty or not text. Pass the path of a text file, absolute "
            f"or relative to the workspace {workspace}."
        )
    try:
        candidate = Path(raw).expanduser()
        if not candidate.is_absolute():
            candidate = workspace / candidate
        real_roots = [Path(root).resolve() for root in roots]
        try:
            real = candidate.resolve(strict=True)
        except FileNotFoundError:
            real = candidate.resolve()
            if not _inside(real, real_roots):
                raise _outside(candidate, roots) from None
            raise ReadFailure(
                f"{candidate} does not exist. Check the spelling; relative paths are resolved "
                f"against the workspace {workspace}."
            ) from None
    except (OSError, RuntimeError, ValueError) as exc:  # also a path changing mid-resolve
        raise ReadFailure(
            f"cannot resolve the path {raw!r} ({exc}). Pass a valid file path; if the file "
            "is being changed right now, read it again once it stops changing."
        ) from None
    if not _inside(real, real_roots):
        raise _outside(candidate, roots)
    return real


def _inside(real: Path, real_roots: Sequence[Path]) -> bool:
    return any(real.is_relative_to(root) for root in real_roots)


def open_inside(real: Path, roots: Sequence[Path]) -> tuple[BinaryIO, Path]:
    """Open the regular file ``real`` once; return the stream and where it really is.

    The returned path is that of the opened file, checked to be inside ``roots``; read
    only from the returned stream (the name may point elsewhere by now).
    """
    try:
        _check_kind(real, os.stat(real).st_mode)  # early, friendly: never open a device
        fd = os.open(real, _OPEN_FLAGS)
    except OSError as exc:
        raise _open_failure(real, exc) from None
    try:
        info = os.fstat(fd)
        _check_kind(real, info.st_mode)
        opened = _opened_path(fd, real, info)
        if not _inside(opened, [Path(root).resolve() for root in roots]):
            names = ", ".join(str(root) for root in roots)
            raise ReadFailure(
                f"{real} led outside the directories read_file may read ({names}) when it "
                "was opened: a directory on the way was replaced by a symbolic link. Use a "
                "path inside one of them."
            )
        return os.fdopen(fd, "rb"), opened
    except ReadFailure:
        os.close(fd)
        raise
    except OSError as exc:
        os.close(fd)
        raise ReadFailure(f"cannot open {real}: {exc.strerror or exc}.") from None
    except BaseException:
        os.close(fd)
        raise


def _check_kind(path: Path, mode: int) -> None:
    if stat.S_ISDIR(mode):
        raise ReadFailure(f"{path} is a directory, not a file. Pass the path of a file inside it.")
    if not stat.S_ISREG(mode):
        raise ReadFailure(
            f"{path} is not a regular file (a device, socket or pipe); read_file only "
            "reads regular text files."
        )


def _open_failure(path: Path, exc: OSError) -> ReadFailure:
    if exc.errno in _SWAPPED_ERRNOS:
        return ReadFailure(
            f"{path} was replaced by a symbolic link while it was being opened; read_file "
            "does not follow it. Read the file again once it stops changing."
        )
    if exc.errno == errno.ENOENT:
        return ReadFailure(f"{path} was removed while it was being opened. Check the path.")
    return ReadFailure(f"cannot open {path}: {exc.strerror or exc}.")


def _opened_path(fd: int, real: Path, info: os.stat_result) -> Path:
    """The real path of the open file ``fd`` (opened by the name ``real``)."""
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        target = None
    if target is not None and target.startswith("/"):
        if info.st_nlink == 0 and target.endswith(_DELETED_SUFFIX):
            target = target[: -len(_DELETED_SUFFIX)]
        return Path(target)
    # No /proc: the name must still lead to the very file that was opened. A directory on
    # the way swapped out and back in between open and this check is not detected here.
    try:
        now = os.stat(real)
    except OSError:
        now = None
    if now is None or (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino):
        raise ReadFailure(
            f"{real} changed while it was being opened. Read the file again once it stops changing."
        )
    return real


def _outside(path: Path, roots: Sequence[Path]) -> ReadFailure:
    names = ", ".join(str(root) for root in roots)
    return ReadFailure(
        f"{path} is outside the directories read_file may read ({names}), after resolving "
        "symlinks. Use a path inside one of them."
    )
