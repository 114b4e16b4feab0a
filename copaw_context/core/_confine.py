"""Keeping memory, index and archive files inside the workspace: no link leaves it.

The same rule as ``read_file`` (:mod:`copaw_context.core._safe_open`): a path is checked by
name with symlinks resolved, then opened once with ``O_NOFOLLOW`` and the OPENED file checked
again (``/proc/self/fd``), so a link swapped in mid-session is caught. Reads may also lie in
``extra_read_roots``; writes only in the workspace, and never through a hard link.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ._safe_open import ReadFailure, open_inside

__all__ = ["OutsideWorkspaceError", "check_inside", "open_append_inside", "read_bytes_inside"]

_APPEND_FLAGS = (
    os.O_RDWR
    | os.O_CREAT
    | os.O_APPEND
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


class OutsideWorkspaceError(PermissionError):
    """A memory, index or archive path leads outside the workspace (a symlink or hard link)."""


def _roots(workspace: Path, extra: Sequence[Path]) -> list[Path]:
    return [Path(root).resolve() for root in (workspace, *extra)]


def _refuse(path: Path, workspace: Path, why: str) -> OutsideWorkspaceError:
    return OutsideWorkspaceError(
        f"{path} {why}, outside the workspace {workspace}; copaw-context does not follow "
        "links out of the workspace. Replace the link with a real file or folder inside it."
    )


def check_inside(
    path: Path, workspace: Path, extra_read_roots: Sequence[Path] = (), *, write: bool
) -> Path:
    """``path`` if it (symlinks resolved) lies inside the workspace (or, for a read, an extra
    root); else :class:`OutsideWorkspaceError`."""
    real = Path(path).resolve()
    roots = _roots(workspace, () if write else extra_read_roots)
    if not any(real.is_relative_to(root) for root in roots):
        raise _refuse(path, workspace, f"leads to {real}")
    return path


def read_bytes_inside(path: Path, workspace: Path, extra_read_roots: Sequence[Path] = ()) -> bytes:
    """The bytes of ``path``, confined; :class:`FileNotFoundError` when there is none."""
    check_inside(path, workspace, extra_read_roots, write=False)
    if not path.exists():
        raise FileNotFoundError(str(path))
    try:
        handle, _opened = open_inside(Path(path).resolve(), _roots(workspace, extra_read_roots))
    except ReadFailure as failure:
        if not path.exists():
            raise FileNotFoundError(str(path)) from None
        raise _refuse(path, workspace, f"could not be read safely ({failure})") from None
    with handle:
        return handle.read()


def open_append_inside(path: Path, workspace: Path) -> int:
    """A descriptor of ``path`` opened for appending, confined to the workspace; a final
    symlink, a hard link or a folder on the way swapped to elsewhere is refused."""
    check_inside(path.parent, workspace, write=True)
    try:
        fd = os.open(path, _APPEND_FLAGS, 0o644)
    except OSError as error:
        if os.path.islink(path):
            raise _refuse(path, workspace, "is a symbolic link") from None
        raise error
    try:
        info = os.fstat(fd)
        if info.st_nlink > 1:
            raise _refuse(path, workspace, "is a hard link shared with another file")
        try:
            opened = Path(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            opened = path.resolve()
        root = Path(workspace).resolve()
        if not opened.is_relative_to(root):
            raise _refuse(path, workspace, f"was opened as {opened}")
    except BaseException:
        os.close(fd)
        raise
    return fd
