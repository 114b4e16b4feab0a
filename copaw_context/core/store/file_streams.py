"""The file store's streams: JSONL files in the workspace, appended as the dialog archive is.

A stream ``dialog/2026-05-01.jsonl`` is that file. An append holds the lock of every file
it writes (``<file>.lock``, taken in key order: no deadlock between writers), writes each
file's new lines with one write and ``fsync`` (:mod:`copaw_context.core.archive.lines`), and
rolls back what it already wrote when a later file fails, so a retry never duplicates a
line. A record's key is the one its line names (``session_id`` and ``archive_id``), read
from the file itself (:func:`copaw_context.core.archive.reader.archived_keys`): the
files stay exactly what the archive writes today.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

import filelock

from copaw_context.core.archive.lines import (
    Appended,
    AppendError,
    append_lines,
    open_archive_dir,
    open_day,
    truncate_to,
)
from copaw_context.core.archive.reader import archived_keys
from copaw_context.core.errors import ArchiveError
from copaw_context.core.store.lines import check_key, record_key
from copaw_context.core.store.protocol import AppendResult, StoreError, StreamEntry, StreamRecord
from copaw_context.core.workspace import durable
from copaw_context.core.workspace.confine import OutsideWorkspaceError, check_inside
from copaw_context.core.workspace.fd_lock import lock_at

__all__ = ["append_streams", "check_stream", "list_streams", "read_stream"]


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
    workspace: Path, records: Sequence[StreamRecord], lock_timeout: float
) -> AppendResult:
    """Append ``records`` (see the module docstring); blocking, run in a worker thread."""
    _check_records(records)
    if not records:
        return AppendResult(0)
    durable.flush()  # the blobs these lines name are on disk before the lines
    by_stream: dict[str, list[StreamRecord]] = {}
    for record in records:
        by_stream.setdefault(record.stream, []).append(record)
    streams = sorted(by_stream)
    skipped: list[str] = []
    appended = 0
    with contextlib.ExitStack() as held:
        fds: dict[str, tuple[Path, int]] = {}
        for stream in streams:  # every lock first, in key order
            path = workspace / stream
            try:
                check_inside(path.parent, workspace, write=True)
                dir_fd = held.enter_context(open_archive_dir(path.parent, workspace))
                lock = path.with_name(path.name + ".lock")
                held.enter_context(lock_at(dir_fd, lock, workspace, lock_timeout))
                check_inside(path, workspace, write=True)
                if path.exists() and os.stat(path).st_nlink > 1:
                    raise OutsideWorkspaceError(f"{path} is a hard link shared with another file")
                fd = open_day(dir_fd, path, workspace)
            except (OSError, ArchiveError, filelock.Timeout) as error:
                raise StoreError(
                    f"cannot append to {stream}: {error}; nothing was written"
                ) from error
            held.callback(os.close, fd)
            fds[stream] = (path, fd)
        done: list[Appended] = []
        for stream in streams:
            path, fd = fds[stream]
            try:
                lines = _fresh(path, fd, by_stream[stream], skipped)
                if lines:
                    done.append(append_lines(path, lines, fd))
                    appended += len(lines)
            except (AppendError, OSError) as error:
                undone = all(truncate_to(item.path, item.size_before, item.fd) for item in done)
                state = "nothing was written" if undone else "rolling back failed too"
                raise StoreError(f"cannot append to {stream}: {error}; {state}") from error
            except BaseException:
                for item in done:
                    truncate_to(item.path, item.size_before, item.fd)
                raise
    return AppendResult(appended, tuple(skipped))


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
