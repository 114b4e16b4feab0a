"""Reading the indexed files: whole lines from where the last run stopped, and what tells an
append from a rewrite."""

from __future__ import annotations

import hashlib
import os
from typing import Any, BinaryIO

__all__ = ["complete_lines", "tail_hash", "up_to_date"]

_TAIL_BYTES = 64
_STEP_BYTES = 4 << 20


def up_to_date(row: tuple[Any, ...], info: os.stat_result, *, whole: bool = False) -> bool:
    """Whether the file is as it was when ``row`` was written and all of it is indexed; for a
    file written ``whole`` once (a saved tool output), only its size and inode count: a
    cleanup that keeps it touches its modification time."""
    if whole:
        return (row[0], row[2], row[3]) == (info.st_size, info.st_ino, info.st_size)
    state = (info.st_size, info.st_mtime_ns, info.st_ino)
    return tuple(row[:3]) == state and row[3] == info.st_size


def complete_lines(handle: BinaryIO, available: int) -> bytes:
    """Up to about ``_STEP_BYTES`` of whole lines from the handle's position (a longer single
    line whole); b"" when only a torn last line is there."""
    data = handle.read(min(available, _STEP_BYTES))
    end = data.rfind(b"\n") + 1
    while end == 0 and len(data) < available:  # one line longer than a step
        more = handle.read(min(available - len(data), _STEP_BYTES))
        if not more:
            break
        newline = more.find(b"\n")
        data += more
        if newline >= 0:
            end = len(data) - len(more) + newline + 1
    return data[:end]


def tail_hash(handle: BinaryIO, end: int) -> str:
    """A hash of the bytes just before ``end``: tells an append from a rewrite."""
    start = max(0, end - _TAIL_BYTES)
    handle.seek(start)
    return hashlib.sha1(handle.read(end - start)).hexdigest()
