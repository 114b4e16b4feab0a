"""The file store's streams, and the one writer of the dialog archive's JSONL files.

A stream ``dialog/2026-05-01.jsonl`` is that file. :func:`append_files` is how any line
gets into such a file without a DSN (``FileStore.append``, hence the archive step through
``DialogArchive``; a ``DialogArchive`` without a workspace calls it directly): after
:func:`copaw_context.core.workspace.durable.flush` (the saved outputs the lines name are on
disk first) it takes the lock of every file it writes (``<file>.lock``, in the order given:
no deadlock between writers), refuses a folder or file that leads out of the workspace (a
link, a hard link), writes each file's new lines with one write and ``fsync``
(:mod:`copaw_context.core.archive.lines`), and rolls back what it already wrote when a later
file fails, so a retry never duplicates a line. Which lines are new is chosen under the
locks (:attr:`FileBatch.fresh`). A record's key is the one its line names (``session_id``
and ``archive_id``), read from the file itself
(:func:`copaw_context.core.archive.reader.archived_keys`): the files stay exactly what the
archive wrote before the store existed. :func:`line_counts` lists the day files with their
line counts (``FileStore.line_counts``, hence ``DialogArchive.list_files``), each count
cached per file (:func:`copaw_context.core.archive.reader.cached_line_count`).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import re
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, NoReturn

import filelock

from copaw_context.core.archive.lines import (
    Appended,
    AppendError,
    ArchivedFile,
    ArchivePartialWriteError,
    append_lines,
    open_archive_dir,
    open_day,
    truncate_to,
)
from copaw_context.core.archive.reader import archived_keys, cached_line_count
from copaw_context.core.errors import ArchiveError
from copaw_context.core.store.lines import check_key, record_key
from copaw_context.core.store.protocol import AppendResult, StoreError, StreamEntry, StreamRecord
from copaw_context.core.workspace import durable
from copaw_context.core.workspace.confine import OutsideWorkspaceError, check_inside, refusal
from copaw_context.core.workspace.fd_lock import lock_at
from copaw_context.core.workspace.safe_open import ReadFailure, open_inside

__all__ = [
    "FileAppendResult",
    "FileBatch",
    "FreshLines",
    "StreamReadError",
    "append_files",
    "append_streams",
    "check_stream",
    "line_counts",
    "list_streams",
    "read_stream",
]

logger = logging.getLogger("copaw_context")

FreshLines = Callable[[str, int], list[bytes]]
"""Given a stream and the open descriptor of its file (its lock held), the lines to write
there (each ending with its newline)."""


class StreamReadError(StoreError):
    """The streams' folder (``stream`` ``None``) or one stream's file could not be read; the
    ``OSError`` is its ``__cause__``."""

    def __init__(self, message: str, stream: str | None) -> None:
        super().__init__(message)
        self.stream = stream


@dataclass(frozen=True)
class FileBatch:
    """One file of an append: where it is, and the lines still to write there, chosen from
    its open descriptor once its lock is held (``fresh(fd)``)."""

    path: Path
    fresh: Callable[[int], list[bytes]]


@dataclass(frozen=True, slots=True)
class FileAppendResult(AppendResult):
    """``FileStore.append``'s result; beyond the protocol, ``lengths``: each stream written
    and how many lines its file holds after the append (an unterminated last line counted)."""

    lengths: tuple[tuple[str, int], ...] = ()


def append_files(
    batches: Sequence[FileBatch], workspace: Path | None, lock_timeout: float
) -> list[ArchivedFile]:
    """Append each batch to its file (see the module docstring); blocking, run it in a
    worker thread. Returns the files written with their line counts after the append.

    Without a ``workspace`` nothing is confined (a standalone archive). Raises
    :class:`~copaw_context.core.errors.ArchiveError` (nothing was written: what this call
    wrote is rolled back) or :class:`~copaw_context.core.archive.lines.ArchivePartialWriteError`
    (the rollback failed too: its ``written`` may hold lines of the batch).
    """
    durable.flush()  # the saved outputs these lines name are on disk before the lines
    with contextlib.ExitStack() as held:
        folders: dict[Path, int | None] = {}
        # Every lock first, in the order given (the callers' key or date order): no deadlock
        # between writers, and no other writer appends after our lines before a rollback.
        for batch in batches:
            path = batch.path
            if path.parent not in folders:
                _confine(path.parent, workspace)
                # By descriptor: a folder swapped for a link after the check is refused.
                folders[path.parent] = held.enter_context(open_archive_dir(path.parent, workspace))
            try:
                lock = path.with_name(path.name + ".lock")
                held.enter_context(lock_at(folders[path.parent], lock, workspace, lock_timeout))
            except (OSError, filelock.Timeout) as error:
                raise ArchiveError(
                    f"cannot append to archive file {path}: {_cause(error, path, lock_timeout)}; "
                    "nothing was written"
                ) from error
        for batch in batches:
            _confine(batch.path, workspace)
        done: list[Appended] = []
        for batch in batches:
            path = batch.path
            try:
                fd = open_day(folders[path.parent], path, workspace)
                held.callback(os.close, fd)
                lines = batch.fresh(fd)
                if lines:
                    done.append(append_lines(path, lines, fd))
            except AppendError as error:
                _undo(done, error, lock_timeout)
            except OSError as error:  # refused (a link), or reading the existing keys failed
                _undo(done, AppendError(path, error, None), lock_timeout)
            except BaseException:
                for item in done:
                    truncate_to(item.path, item.size_before, item.fd)
                raise
    return [ArchivedFile(item.path, item.lines_after) for item in done]


def _confine(path: Path, workspace: Path | None) -> None:
    """Refuse ``path`` (an ArchiveError, nothing written) when it leads outside the
    workspace: a symlinked folder or file, or a file hard-linked elsewhere."""
    if workspace is None:
        return
    try:
        check_inside(path, workspace, write=True)
        if not path.is_dir() and path.exists() and os.stat(path).st_nlink > 1:
            raise OutsideWorkspaceError(
                f"{path} is a hard link shared with another file; copaw-context does not "
                "append to it. Replace it with a real file inside the workspace."
            )
    except OutsideWorkspaceError as error:
        raise ArchiveError(f"{error}; nothing was written") from error


def _cause(error: BaseException, path: Path, lock_timeout: float) -> str:
    if isinstance(error, filelock.Timeout):
        return (
            f"timed out after {lock_timeout:g} s waiting for {path}.lock "
            "(another process is writing it)"
        )
    return f"{type(error).__name__}: {error}"


def _undo(done: list[Appended], failure: AppendError, lock_timeout: float) -> NoReturn:
    """Roll back the files ``done`` already hold, then raise for ``failure``."""
    cause = _cause(failure.error, failure.path, lock_timeout)
    stuck = [
        ArchivedFile(item.path, item.lines_after)
        for item in done
        if not truncate_to(item.path, item.size_before, item.fd)
    ]
    if failure.left_lines is not None:
        stuck.append(ArchivedFile(failure.path, failure.left_lines))
    message = f"cannot append to archive file {failure.path}: {cause}"
    if not stuck:
        undone = f"; rolled back {len(done)} other file(s)" if done else ""
        raise ArchiveError(f"{message}; nothing was written{undone}") from failure.error
    names = ", ".join(str(item.path) for item in stuck)
    raise ArchivePartialWriteError(
        f"{message}; rolling back failed too, so these files may hold lines of this batch "
        f"and a retry would duplicate them there: {names}",
        stuck,
        failure.path,
    ) from failure.error


def check_stream(stream: str) -> str:
    """``stream`` if it names a ``.jsonl`` file (the file store keeps JSONL streams only)."""
    check_key(stream, "stream")
    if not stream.endswith(".jsonl"):
        raise StoreError(f"the file store keeps JSONL streams only; {stream!r} is not a .jsonl")
    return stream


def _check_records(records: Sequence[StreamRecord]) -> None:
    for index, record in enumerate(records):
        check_stream(record.stream)
        if b"\n" in record.data:
            raise StoreError(f"record #{index} of {record.stream!r} is not a single line")
        try:
            json.loads(record.data)
        except ValueError as error:
            raise StoreError(
                f"record #{index} of {record.stream!r} is not JSON ({error}); a JSONL stream "
                "holds one JSON value per line"
            ) from None
        if record.key is not None and record_key(record.data) != record.key:
            raise StoreError(
                f"record #{index} has key {record.key!r} but its line names "
                f"{record_key(record.data)!r}: a JSONL record's key is its "
                '"<session_id>/<archive_id>"'
            )


def append_streams(
    workspace: Path,
    records: Sequence[StreamRecord],
    lock_timeout: float,
    fresh: FreshLines | None = None,
) -> FileAppendResult:
    """Append ``records`` through :func:`append_files`, each stream's lines chosen by
    ``fresh`` (default: those whose key neither the file nor an earlier record holds);
    blocking, run in a worker thread. The archive's errors become a :class:`StoreError` of
    the same text (the archive's own error its ``__cause__``)."""
    _check_records(records)
    if not records:
        return FileAppendResult(0)
    by_stream: dict[str, list[StreamRecord]] = {}
    for record in records:
        by_stream.setdefault(record.stream, []).append(record)
    skipped: list[str] = []
    counts: dict[str, int] = {}

    def chosen(stream: str, fd: int) -> list[bytes]:
        if fresh is None:
            lines = _fresh(workspace / stream, fd, by_stream[stream], skipped)
        else:
            lines = fresh(stream, fd)
        counts[stream] = len(lines)
        return lines

    streams = sorted(by_stream)  # key order: the same for every writer
    paths = {workspace / stream: stream for stream in streams}
    batches = [FileBatch(path, functools.partial(chosen, stream)) for path, stream in paths.items()]
    try:
        written = append_files(batches, workspace, lock_timeout)
    except ArchiveError as error:
        raise StoreError(str(error)) from error
    lengths = tuple((paths[item.path], item.lines) for item in written)
    return FileAppendResult(sum(counts.values()), tuple(skipped), lengths)


def _fresh(path: Path, fd: int, batch: list[StreamRecord], skipped: list[str]) -> list[bytes]:
    """The lines of ``batch`` whose keys ``path`` (or an earlier record) does not hold."""
    known: dict[str, set[str]] = {}
    seen: set[str] = set()
    lines: list[bytes] = []
    for record in batch:
        if record.key is not None:
            session, _, archive_id = record.key.rpartition("/")
            if session not in known:
                known[session] = archived_keys(path, session, fd)[0]
            if archive_id in known[session] or record.key in seen:
                skipped.append(record.key)
                continue
            seen.add(record.key)
        lines.append(record.data + b"\n")
    return lines


def read_stream(workspace: Path, stream: str, start: int) -> list[StreamEntry]:
    """The records of ``stream`` from ``start`` on (a torn last line is left out)."""
    path = workspace / check_stream(stream)
    try:
        check_inside(path, workspace, write=False)
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return []
    except OSError as error:
        raise StoreError(f"cannot read {stream}: {error}") from error
    lines = data.split(b"\n")
    last = lines.pop()  # b"" after the final newline; else an unterminated last line
    if last:
        try:  # the next append terminates a last line that parses and cuts a torn one
            json.loads(last)
            lines.append(last)
        except ValueError:
            pass
    return [
        StreamEntry(seq, record_key(line), line) for seq, line in enumerate(lines) if seq >= start
    ]


def list_streams(workspace: Path, prefix: str) -> list[str]:
    """The ``.jsonl`` streams whose key starts with ``prefix`` (in the prefix's folder)."""
    folder = prefix.rpartition("/")[0]
    directory = workspace / folder if folder else workspace
    try:
        check_inside(directory, workspace, write=False)
        names = sorted(entry.name for entry in os.scandir(directory) if entry.is_file())
    except FileNotFoundError:
        return []
    except OSError as error:
        raise StoreError(f"cannot list {folder or '.'}: {error}") from error
    keys = (f"{folder}/{name}" if folder else name for name in names)
    return [key for key in keys if key.startswith(prefix) and key.endswith(".jsonl")]


def line_counts(
    workspace: Path, prefix: str, names: re.Pattern[str] | None = None
) -> dict[str, int]:
    """Each ``.jsonl`` stream whose key starts with ``prefix`` (and whose file name
    ``names`` matches, when given) and its file's line count, an unterminated last line
    counted (what the summary message cites); blocking. Counted by
    :func:`~copaw_context.core.archive.reader.cached_line_count`: a file is read on from
    where the last count of the process stopped, never whole again. Each file is opened once
    and checked as opened (``safe_open.open_inside``: a folder swapped for a link after the
    check, or a FIFO swapped in, is never read nor waited on). A file removed meanwhile, or
    leading out of the workspace (a link: never read, never appended to), is left out;
    a folder that cannot be listed or leads out, or a file that cannot be read, is a
    :class:`StreamReadError`."""
    folder = prefix.rpartition("/")[0]
    directory = workspace / folder if folder else workspace
    try:
        check_inside(directory, workspace, write=False)
        found = sorted(
            entry.name
            for entry in os.scandir(directory)
            if (names is None or names.fullmatch(entry.name)) and entry.is_file()
        )
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise StreamReadError(f"cannot list {folder or '.'}: {error}", None) from error
    counts: dict[str, int] = {}
    for name in found:
        key = f"{folder}/{name}" if folder else name
        if not key.startswith(prefix) or not key.endswith(".jsonl"):
            continue
        path = directory / name
        try:
            handle = _open_counted(path, workspace)
            if handle is None:
                continue  # removed meanwhile
            with handle:
                counts[key] = cached_line_count(path, handle)
        except OutsideWorkspaceError as error:
            logger.warning("copaw-context: %s is not listed: %s", key, error)
            continue
        except OSError as error:
            raise StreamReadError(f"cannot read {key}: {error}", key) from error
    return counts


def _open_counted(path: Path, workspace: Path) -> BinaryIO | None:
    """``path`` opened once for its count, checked by name then as opened (never blocking on
    a FIFO, never a file a folder swapped for a link after the check leads to):
    :class:`OutsideWorkspaceError` when it leads out or is no regular file, ``None`` when it
    is gone, ``OSError`` when it cannot be read."""
    try:
        real = check_inside(path, workspace, write=False).resolve()
        return open_inside(real, [workspace])[0]
    except FileNotFoundError:
        return None
    except ReadFailure as failure:
        try:
            info = os.stat(path)
        except FileNotFoundError:
            return None
        if stat.S_ISREG(info.st_mode) and path.resolve().is_relative_to(workspace.resolve()):
            raise OSError(str(failure)) from None  # a file of ours that cannot be read
        raise refusal(path, workspace, f"it could not be read safely ({failure})") from None
