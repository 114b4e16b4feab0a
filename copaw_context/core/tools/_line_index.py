"""Where a line of a file begins, by a chunked binary scan; the file's line count is cached
per file version (path, size, mtime, inode) once the file has settled."""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import BinaryIO

__all__ = ["locate_line"]

_SCAN_CHUNK_BYTES = 1 << 20
_LINE_COUNT_CACHE_SIZE = 64
_SETTLED_SECONDS = 2.0

_line_count_cache: OrderedDict[tuple[str, int, int, int], int] = OrderedDict()
_line_count_lock = threading.Lock()


def locate_line(
    stream: BinaryIO, real: Path, info: os.stat_result, start_line: int
) -> tuple[int | None, int]:
    """Byte offset where ``start_line`` begins (None: past the end) and the line count
    (cached while the file is unchanged)."""
    key = (str(real), info.st_size, info.st_mtime_ns, info.st_ino)
    # File timestamps are coarse: a file changed in the last moments could change again
    # without a new mtime, so only settled files use the line-count cache.
    cacheable = time.time() - info.st_mtime > _SETTLED_SECONDS
    with _line_count_lock:
        known_total = _line_count_cache.get(key) if cacheable else None
    start_pos, total = _locate_line(stream, start_line, known_total)
    if known_total is None and cacheable:
        with _line_count_lock:
            _line_count_cache[key] = total
            while len(_line_count_cache) > _LINE_COUNT_CACHE_SIZE:
                _line_count_cache.popitem(last=False)
    return start_pos, total


def _locate_line(
    stream: BinaryIO, start_line: int, known_total: int | None
) -> tuple[int | None, int]:
    """Byte offset where ``start_line`` begins (None: past the end) and the line count."""
    if known_total is not None and start_line > known_total:
        return None, known_total
    if known_total is not None and start_line == 1:
        return 0, known_total
    stream.seek(0)
    newlines_to_skip = start_line - 1
    start_pos: int | None = 0 if start_line == 1 else None
    newlines = 0
    position = 0
    while chunk := stream.read(_SCAN_CHUNK_BYTES):
        in_chunk = chunk.count(b"\n")
        if start_pos is None and newlines + in_chunk >= newlines_to_skip:
            index = -1
            for _ in range(newlines_to_skip - newlines):
                index = chunk.index(b"\n", index + 1)
            start_pos = position + index + 1
            if known_total is not None:
                return start_pos, known_total
        newlines += in_chunk
        position += len(chunk)
    return start_pos, newlines + 1
