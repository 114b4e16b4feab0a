"""Archive lines: the record written for one message, its encoding, appending lines to a
file with one write, ``fsync`` and rollback on failure, and what an append returns or raises
(:class:`ArchivedFile`, :class:`ArchivePartialWriteError`).

A line is ``{"session_id", "archive_id", "parts", "form", "agent_name", "archived_at",
"timestamp", "message"}`` as one JSON object; the identity fields come first so that a
reader can index a file by reading the head of each line only.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from copaw_context.core.archive.reader import count_lines
from copaw_context.core.errors import ArchiveError
from copaw_context.core.workspace.confine import OutsideWorkspaceError
from copaw_context.core.workspace.confine_write import confined_dir, open_append_at

__all__ = [
    "AppendError",
    "Appended",
    "ArchiveLine",
    "ArchivePartialWriteError",
    "ArchivedFile",
    "append_lines",
    "dump_line",
    "open_archive_dir",
    "open_day",
    "truncate_to",
    "without_parts",
]

logger = logging.getLogger("copaw_context")

_TAIL_CHUNK = 65536


@dataclass(frozen=True)
class ArchivedFile:
    """An archive file and its total number of lines."""

    path: Path
    lines: int


class ArchivePartialWriteError(ArchiveError):
    """A failed batch could not be rolled back everywhere.

    Raised only when undoing a failed append itself fails. ``written`` lists the files that
    may still hold lines of the batch (a retry of the same messages would duplicate them
    there); ``failed`` is the file whose write failed.
    """

    def __init__(self, message: str, written: Sequence[ArchivedFile], failed: Path) -> None:
        self.written = tuple(written)
        self.failed = failed
        super().__init__(message)


@dataclass(frozen=True)
class ArchiveLine:
    archive_id: str | None
    parts: list[str] | None
    record: dict[str, Any]
    data: bytes


def without_parts(item: ArchiveLine, known: set[str]) -> bytes | None:
    """``item`` re-encoded without its known parts; None when nothing is left."""
    assert item.parts is not None
    message = item.record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list) or len(content) != len(item.parts):
        logger.warning("archive: %s has parts already archived; written whole", item.archive_id)
        return item.data
    keep = [i for i, key in enumerate(item.parts) if key not in known]
    if not keep:
        return None
    record = dict(item.record)
    record["parts"] = [item.parts[i] for i in keep]
    record["archive_id"] = f"{item.archive_id}~{len(item.parts) - len(keep)}"[:200]
    assert isinstance(message, dict)
    record["message"] = {**message, "content": [content[i] for i in keep]}
    return dump_line(record)


def dump_line(record: dict[str, Any]) -> bytes:
    text = json.dumps(record, ensure_ascii=False)
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        # Lone surrogates cannot be UTF-8; ASCII escapes keep them losslessly.
        return json.dumps(record, ensure_ascii=True).encode("ascii") + b"\n"


@dataclass(frozen=True)
class Appended:
    path: Path
    size_before: int
    lines_after: int
    fd: int | None = None  # the descriptor it was appended through (rolled back through it)


def _write_all(handle: Any, payload: bytes) -> None:
    view = memoryview(payload)
    while view:
        written = handle.write(view)
        if not written:
            raise OSError(f"write returned {written!r} with {len(view)} bytes left")
        view = view[written:]


class AppendError(Exception):
    """Appending to ``path`` failed; ``left_lines`` is set if its own rollback failed too."""

    def __init__(self, path: Path, error: OSError, left_lines: int | None) -> None:
        super().__init__(str(error))
        self.path = path
        self.error = error
        self.left_lines = left_lines


def append_lines(path: Path, lines: list[bytes], fd: int | None = None) -> Appended:
    """Append ``lines`` to ``path`` (its lock held) with one write and ``fsync``; through the
    open descriptor ``fd`` when given (the caller keeps and closes it)."""
    size: int | None = None
    try:
        # Unbuffered: a failed write can be rolled back without a buffer flushing later.
        opened: int | Path = path if fd is None else os.dup(fd)
        with open(opened, "a+b", buffering=0) as handle:
            size = handle.seek(0, os.SEEK_END)
            payload = b"".join(lines)
            if size:
                handle.seek(size - 1)
                if handle.read(1) != b"\n":
                    size, payload = _end_last_line(handle, path, size, payload)
            _write_all(handle, payload)
            os.fsync(handle.fileno())
            return Appended(path, size, count_lines(handle), fd)
    except BaseException as error:
        rolled_back = size is None or truncate_to(path, size, fd)
        if not isinstance(error, OSError):
            raise
        left = None if rolled_back else lines_in(path)
        raise AppendError(path, error, left) from error


def _end_last_line(handle: Any, path: Path, size: int, payload: bytes) -> tuple[int, bytes]:
    """A file that does not end with a newline: a last line that parses is terminated; a
    torn one (a writer killed mid-append, whose messages its caller still holds) is cut off,
    so that every line of the file parses. Returns the size to append at and the payload."""
    start = size
    while start > 0:
        step = min(start, _TAIL_CHUNK)
        handle.seek(start - step)
        found = handle.read(step).rfind(b"\n")
        if found >= 0:
            start = start - step + found + 1
            break
        start -= step
    handle.seek(start)
    tail = handle.read(size - start)
    try:
        json.loads(tail)
    except ValueError:
        handle.truncate(start)
        logger.warning("archive: cut a torn last line (%d bytes) off %s", size - start, path)
        return start, payload
    return size, b"\n" + payload


def truncate_to(path: Path, size: int, fd: int | None = None) -> bool:
    """Cut ``path`` (through ``fd`` when given) back to ``size`` bytes and persist that;
    False (logged) if impossible."""
    try:
        if fd is not None:
            os.ftruncate(fd, size)
            os.fsync(fd)
            return True
        with open(path, "r+b", buffering=0) as handle:
            handle.truncate(size)
            os.fsync(handle.fileno())
    except OSError as error:
        logger.error("archive: could not roll back %s to %d bytes: %s", path, size, error)
        return False
    return True


def lines_in(path: Path) -> int:
    try:
        with open(path, "rb") as handle:
            return count_lines(handle)
    except OSError:
        return 0


@contextlib.contextmanager
def open_archive_dir(directory: Path, workspace: Path | None) -> Iterator[int | None]:
    """The archive folder's descriptor (None without a workspace), created if missing and
    reached without following links; an ArchiveError (nothing written) otherwise."""
    try:
        if workspace is None:
            directory.mkdir(parents=True, exist_ok=True)
            yield None
            return
        with confined_dir(directory, workspace) as fd:
            yield fd
    except OutsideWorkspaceError as error:
        raise ArchiveError(f"{error}; nothing was written") from error
    except OSError as error:
        raise ArchiveError(
            f"cannot create archive directory {directory}: {error}; nothing was written"
        ) from error


def open_day(dir_fd: int | None, path: Path, workspace: Path | None) -> int:
    """A descriptor of the day file ``path`` opened for appending, confined (no link, no
    hard link) when there is a workspace."""
    if dir_fd is None or workspace is None:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o666)
    return open_append_at(dir_fd, path.name, path, workspace)
