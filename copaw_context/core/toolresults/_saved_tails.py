"""The ends of the outputs this process saved, kept in memory: a compaction shows the
compactor the tail of each offloaded output (errors are printed last), and the writer had
those bytes in hand, so the compaction need not open, check and read the file again.

Process-wide (a host may build a new store, or a new agent, per request), bounded (least
recently used first out), keyed by the absolute path the writer returned. A hit gives the
bytes the file ends with, exactly as :func:`tail_of` makes them from the file (the same
whole-line rule, the same decoding). Saved files are never rewritten (each has a new uuid
name), so the bytes stay right for as long as the file exists.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

__all__ = ["KEPT_BYTES", "forget_tail", "forget_tails", "known_tail", "remember_tail", "tail_of"]

KEPT_BYTES = 4096
"""Bytes of each saved output's end kept (a tail of at most this many is answered)."""
_MAX_FILES = 4096  # at most 16 MiB
_lock = threading.Lock()
_tails: OrderedDict[str, tuple[int, bytes]] = OrderedDict()


def tail_of(data: bytes, size: int, max_bytes: int) -> str:
    """The last ``max_bytes`` of a file of ``size`` bytes that ends with ``data``, from its
    first whole line (when the file is longer), decoded with replacement characters."""
    start = max(0, size - max_bytes)
    data = data[len(data) - (size - start) :]
    if start > 0:
        newline = data.find(b"\n")
        data = data[newline + 1 :] if newline >= 0 else data
    return data.decode("utf-8", errors="replace")


def remember_tail(path: str, size: int, end: bytes) -> None:
    """Keep the last bytes ``end`` of the file ``path`` (``size`` bytes) just written."""
    with _lock:
        _tails[path] = (size, end[-KEPT_BYTES:])
        _tails.move_to_end(path)
        while len(_tails) > _MAX_FILES:
            _tails.popitem(last=False)


def known_tail(path: str, max_bytes: int) -> str | None:
    """The tail of ``path`` as :func:`tail_of` reads it, if this process wrote the file and
    kept enough of its end; else None (read the file)."""
    with _lock:
        known = _tails.get(path)
        if known is not None:
            _tails.move_to_end(path)
    if known is None:
        return None
    size, end = known
    if min(size, max_bytes) > len(end):
        return None
    return tail_of(end, size, max_bytes)


def forget_tail(path: str) -> None:
    """Forget the end of ``path`` (the file was removed: a tail of it is no longer shown)."""
    with _lock:
        _tails.pop(path, None)


def forget_tails() -> None:
    """Forget every kept tail (the benchmark's runs start cold)."""
    with _lock:
        _tails.clear()
