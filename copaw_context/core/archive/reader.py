"""Reading archive files: their records, line counts and the archive ids a session wrote.

Archive files only grow (a failed append is rolled back to its old size), so each file is
read from where the last read stopped instead of from the start. Both caches are keyed by
path (and, for ids, by session) and shared by every archive of the process.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

__all__ = ["archived_keys", "cached_line_count", "count_lines", "read_archive"]

logger = logging.getLogger("copaw_context")

_CHUNK_BYTES = 1 << 20


# path -> (size, newlines in the first `size` bytes, whether byte `size - 1` is a newline).
# Archive files only grow (a failed append is rolled back to its old size), so a larger
# file is counted from where the last count stopped instead of from the start.
_LINE_COUNTS: dict[str, tuple[int, int, bool]] = {}
_LINE_COUNTS_LOCK = threading.Lock()


def cached_line_count(path: Path, opened: BinaryIO | None = None) -> int:
    """The line count of ``path`` (an unterminated last line counted), read on from the last
    count; from ``opened``, the file already open (and checked) when given (left open)."""
    key = str(path)
    with contextlib.nullcontext(opened) if opened is not None else open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        with _LINE_COUNTS_LOCK:
            cached = _LINE_COUNTS.get(key)
        start, newlines, ends_with_newline = (0, 0, True)
        if cached is not None and cached[0] <= size:
            start, newlines, ends_with_newline = cached
        handle.seek(start)
        while chunk := handle.read(_CHUNK_BYTES):
            newlines += chunk.count(b"\n")
            ends_with_newline = chunk.endswith(b"\n")
            start += len(chunk)
    with _LINE_COUNTS_LOCK:
        _LINE_COUNTS[key] = (start, newlines, ends_with_newline)
    return newlines + (0 if ends_with_newline or start == 0 else 1)


# (path, session) -> (bytes scanned, archive ids of that session in them). Like the line
# counts: archive files only grow, so a larger file is scanned from where the last scan
# stopped (a partial last line is left for the next scan).
_ARCHIVED: dict[tuple[str, str], tuple[int, int, set[str], set[str]]] = {}
_ARCHIVED_LOCK = threading.Lock()
_DECODER = json.JSONDecoder()


def archived_keys(path: Path, session_id: str, fd: int | None = None) -> tuple[set[str], set[str]]:
    """(archive ids, part keys) that ``session_id`` wrote to ``path`` (its lock is held), read
    through the open descriptor ``fd`` when given.

    Our lines start ``{"session_id": ..., "archive_id": ..., "parts": [...]``, so only that
    prefix of each line of the session is read.
    """
    key = (str(path), session_id)
    # Lines are written with ensure_ascii=False, or True when a lone surrogate forced it.
    prefixes = {
        b"{"
        + json.dumps({"session_id": session_id}, ensure_ascii=ascii)[1:-1].encode()
        + b', "archive_id": "'
        for ascii in (False, True)
        if ascii or not _has_surrogate(session_id)
    }
    try:
        handle = open(path if fd is None else os.dup(fd), "rb")  # noqa: SIM115 - with-block below
    except FileNotFoundError:
        return set(), set()
    with handle:
        info = os.fstat(handle.fileno())
        with _ARCHIVED_LOCK:
            cached = _ARCHIVED.get(key)
        start, inode, ids, parts = 0, info.st_ino, set(), set()
        if cached is not None and cached[1] == info.st_ino and cached[0] <= info.st_size:
            start, ids, parts = cached[0], set(cached[2]), set(cached[3])
        handle.seek(start)
        pending = b""
        while chunk := handle.read(_CHUNK_BYTES):
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            for line in lines:
                for prefix in prefixes:
                    if line.startswith(prefix):
                        _read_keys(line, len(prefix), ids, parts)
            start += len(chunk)
        start -= len(pending)
    with _ARCHIVED_LOCK:
        _ARCHIVED[key] = (start, inode, ids, parts)
    return ids, parts


def _read_keys(line: bytes, at: int, ids: set[str], parts: set[str]) -> None:
    end = line.find(b'"', at)
    if end <= 0:
        return
    ids.add(line[at:end].decode("ascii", "replace"))
    marker = b', "parts": ['
    if line.startswith(marker, end + 1):
        start = end + 1 + len(marker)
        text = line[start : start + (1 << 20)].decode("utf-8", "replace")
        try:
            value, _ = _DECODER.raw_decode("[" + text)
        except ValueError:
            return
        parts.update(p for p in value if isinstance(p, str))


def _has_surrogate(text: str) -> bool:
    return any("\ud800" <= ch <= "\udfff" for ch in text)


def count_lines(handle: Any) -> int:
    """Count lines reading in fixed-size chunks; a final unterminated line counts too."""
    handle.seek(0)
    count = 0
    last = b""
    while chunk := handle.read(_CHUNK_BYTES):
        count += chunk.count(b"\n")
        last = chunk
    if last and not last.endswith(b"\n"):
        count += 1
    return count


def read_archive(path: Path) -> Iterator[dict[str, Any]]:
    """Yield the records of one archive file; torn or unparseable lines are logged and skipped."""
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            line = raw.rstrip(b"\r\n")
            if not line.strip():
                continue
            try:
                record = json.loads(line.decode("utf-8"))
            except ValueError as error:
                logger.warning(
                    "archive %s line %d is torn or invalid, skipped: %s", path, number, error
                )
                continue
            if not isinstance(record, dict):
                logger.warning("archive %s line %d is not a JSON object, skipped", path, number)
                continue
            yield record
