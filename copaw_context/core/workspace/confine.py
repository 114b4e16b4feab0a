"""Keeping memory, index and archive files inside the workspace: no link leaves it.

The same rule as ``read_file`` (:mod:`copaw_context.core.workspace.safe_open`): a path is checked by
name with symlinks resolved, then opened once with ``O_NOFOLLOW`` and the OPENED file checked
again (``/proc/self/fd``), so a link swapped in mid-session is caught. Reads may also lie in
``extra_read_roots``; writes only in the workspace, and never through a hard link (writes go
through :mod:`copaw_context.core.workspace.confine_write`, which never follows a folder by name).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from copaw_context.core.workspace.safe_open import ReadFailure, open_inside

__all__ = [
    "NotAFileError",
    "OutsideWorkspaceError",
    "check_inside",
    "outside_reason",
    "read_bytes_inside",
    "refusal",
]


class OutsideWorkspaceError(PermissionError):
    """A memory, index or archive path leads outside the workspace (a symlink or hard link)."""


class NotAFileError(OutsideWorkspaceError):
    """A memory, index or archive path inside the workspace that is no regular file (a folder,
    a FIFO, a device): refused as a link out is (every caller's handling of one holds), but
    named for what it is."""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device"


def _roots(workspace: Path, extra: Sequence[Path]) -> list[Path]:
    return [Path(root).resolve() for root in (workspace, *extra)]


def outside_reason(path: Path, workspace: Path) -> str:
    """Why ``path`` is outside the workspace, naming the link on the way when there is one:
    ``"<ws>/dialog/dumps is a symbolic link to /tmp/x"``, else where it resolves to."""
    path = Path(path)
    root = Path(workspace).resolve()
    walked = Path(path.anchor) if path.is_absolute() else Path()
    for part in path.parts[1:] if path.is_absolute() else path.parts:
        walked = walked / part
        if os.path.islink(walked):
            try:
                target = Path(os.readlink(walked))
            except OSError:
                continue
            real = walked.resolve()
            if not real.is_relative_to(root):
                shown = f"{target} (that is {real})" if target != real else str(target)
                return f"{walked} is a symbolic link to {shown}"
    real = path.resolve()
    return f"{path} is not inside it" if real == path else f"{path} is {real}, not inside it"


def refusal(path: Path, workspace: Path, why: str | None = None) -> OutsideWorkspaceError:
    """The error for ``path`` leading outside the workspace: what, why, and how to fix it."""
    return OutsideWorkspaceError(
        f"{path} is outside the workspace {workspace}: {why or outside_reason(path, workspace)}; "
        "copaw-context does not follow links out of the workspace. Replace the link with a "
        "real file or folder inside the workspace."
    )


def check_inside(
    path: Path, workspace: Path, extra_read_roots: Sequence[Path] = (), *, write: bool
) -> Path:
    """``path`` if it (symlinks resolved) lies inside the workspace (or, for a read, an extra
    root); else :class:`OutsideWorkspaceError`."""
    real = Path(path).resolve()
    roots = _roots(workspace, () if write else extra_read_roots)
    if not any(real.is_relative_to(root) for root in roots):
        raise refusal(path, workspace)
    return path


def read_bytes_inside(path: Path, workspace: Path, extra_read_roots: Sequence[Path] = ()) -> bytes:
    """The bytes of ``path``, confined; :class:`FileNotFoundError` when there is none,
    :class:`NotAFileError` when it is a folder, a FIFO or a device (never opened to block)."""
    check_inside(path, workspace, extra_read_roots, write=False)
    if not path.exists():
        raise FileNotFoundError(str(path))
    try:
        handle, _opened = open_inside(Path(path).resolve(), _roots(workspace, extra_read_roots))
    except ReadFailure as failure:
        try:
            info = os.stat(path)
        except FileNotFoundError:
            raise FileNotFoundError(str(path)) from None
        except OSError:
            info = None
        if info is not None and not stat.S_ISREG(info.st_mode):
            raise NotAFileError(
                f"{path} is not a regular file ({_kind(info.st_mode)}); copaw-context reads "
                f"and replaces only regular files. Remove or rename it, so that a new "
                f"{path.name} can be written."
            ) from None
        raise refusal(path, workspace, f"it could not be read safely ({failure})") from None
    with handle:
        return handle.read()
