"""Whether a cut to a byte limit makes a tool result shorter at all.

A cut keeps at most the limit and adds a notice of up to a few hundred bytes (the file to
read the rest from, the line to continue at), so a result just over the limit comes out
longer than it went in (a 3,058-byte result cut to 3,000 bytes was 3,394). Such a result is
kept whole. Deciding costs nothing for a result much longer than the limit; for one within a
notice of it, a trial cut of at most the limit and a notice (the file named as the offload
store names every file: the same length, so the same notice size).
"""

from __future__ import annotations

from collections.abc import Sequence

from copaw_context.core.toolresults.notice import NOTICE_BUDGET_BYTES
from copaw_context.core.toolresults.truncation import is_shorter, truncate_parts_output

__all__ = ["cut_shortens"]


def cut_shortens(texts: Sequence[str], max_bytes: int, file_path: str | None) -> bool:
    """Whether cutting ``"\\n".join(texts)`` to ``max_bytes``, with a notice naming a file
    named as long as ``file_path`` (None: no file), leaves fewer bytes than it has."""
    if sum(len(text) for text in texts) + len(texts) - 1 > max_bytes + NOTICE_BUDGET_BYTES:
        return True  # more characters (so bytes) than any cut to max_bytes has bytes
    lines = sum(text.count("\n") for text in texts) + len(texts)
    trial = truncate_parts_output(texts, max_bytes, file_path=file_path, total_lines=lines)
    return is_shorter(trial, texts)
