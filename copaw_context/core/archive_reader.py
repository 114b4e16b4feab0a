"""Reading archive files: their records, line counts and the archive ids a session wrote.

Archive files only grow (a failed append is rolled back to its old size), so each file is
read from where the last read stopped instead of from the start. Both caches are keyed by
path (and, for ids, by session) and shared by every archive of the process.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["archived_ids", "cached_line_count", "count_lines", "read_archive"]

logger = logging.getLogger("copaw_context")

_CHUNK_BYTES = 1 << 20


# path -> (size, newlines in the first `size` bytes, whether byte `size - 1` is a newline).
# Archive files only grow (a failed append is rolled back to its old size), so a larger
# file is counted from where the last count stopped instead of from the start.
_LINE_COUNTS: dict[str, tuple[int, int, bool]] = {}
_LINE_COUNTS_LOCK = threading.Lock()


def cached_line_count(path: Path) -> int:
    key = str(path)
    with open(path, "rb") as handle:
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
_ARCHIVED_IDS: dict[tuple[str, str], tuple[int, int, set[str]]] = {}
_ARCHIVED_IDS_LOCK = threading.Lock()


def archived_ids(path: Path, session_id: str) -> set[str]:
    """Archive ids that ``session_id`` wrote to ``path`` (the file's lock is held)."""
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
        handle = open(path, "rb")  # noqa: SIM115 - closed by the with-block below
    except FileNotFoundError:
        return set()
    with handle:
        info = os.fstat(handle.fileno())
        with _ARCHIVED_IDS_LOCK:
            cached = _ARCHIVED_IDS.get(key)
        start, inode, ids = 0, info.st_ino, set()
        if cached is not None and cached[1] == info.st_ino and cached[0] <= info.st_size:
            start, ids = cached[0], set(cached[2])
        handle.seek(start)
        pending = b""
        while chunk := handle.read(_CHUNK_BYTES):
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            for line in lines:
                for prefix in prefixes:
                    if line.startswith(prefix):
                        end = line.find(b'"', len(prefix))
                        if end > 0:
                            ids.add(line[len(prefix) : end].decode("ascii", "replace"))
            start += len(chunk)
        start -= len(pending)
    with _ARCHIVED_IDS_LOCK:
        _ARCHIVED_IDS[key] = (start, inode, ids)
    return ids


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
