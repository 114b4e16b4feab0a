"""Save a tool result's text whole, then cut it with a notice naming the saved file.

Stage 1 (:mod:`.policy`) and the request cut (:mod:`copaw_context.core.steps.cut`) offload
this way: the text is written streaming and only the excerpt is built. When the save fails,
the text is cut all the same and the notice says that the full text could not be saved.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from copaw_context.core.toolresults.offload import OffloadStore, SavedText
from copaw_context.core.toolresults.truncation import (
    notice_path,
    truncate_parts_output,
    truncate_text_output,
)

__all__ = ["offload_and_cut", "offload_parts"]

logger = logging.getLogger("copaw_context")


async def offload_and_cut(
    store: OffloadStore,
    text: str,
    max_bytes: int,
    workspace: Path | None,
    *,
    recut_notice: bool = True,
) -> tuple[str, Path | None]:
    """Save ``text`` whole to ``store``, then cut it with a notice naming the saved file.

    Returns the cut text and the saved path (None when saving failed: the notice then says
    the full text could not be saved). ``recut_notice`` as in :func:`truncate_text_output`:
    pass False when a notice at the end of ``text`` is content, not our earlier cut. The
    text is written streaming and only the excerpt is built (see :func:`offload_parts`).
    """
    if not recut_notice:
        return await offload_parts(store, (text,), max_bytes, workspace)
    saved, path, lines = await _save(store, (text,), workspace)
    cut = truncate_text_output(text, total_lines=lines, max_bytes=max_bytes, file_path=path)
    return cut, saved


async def offload_parts(
    store: OffloadStore, parts: Sequence[str], max_bytes: int, workspace: Path | None
) -> tuple[str, Path | None]:
    """:func:`offload_and_cut` of ``"\\n".join(parts)`` (a notice at its end is content), saved
    and cut without joining the parts: the work beyond the excerpt is the streaming write."""
    saved, path, lines = await _save(store, parts, workspace)
    return truncate_parts_output(parts, max_bytes, file_path=path, total_lines=lines), saved


async def _save(
    store: OffloadStore, parts: Sequence[str], workspace: Path | None
) -> tuple[Path | None, str | None, int]:
    """Save the joined parts: (path, how a notice names it, line count), None for what
    failed (0 lines: unknown, the cut counts them)."""
    saved: SavedText | None = None
    try:
        saved = await store.save_parts(parts)
        return saved.path, saved.key or notice_path(saved.path, workspace), saved.lines
    except (OSError, ValueError) as exc:  # absolute if it fits, else workspace-relative
        logger.error(
            "copaw-context: could not save %d characters to %s (%s); cutting without a saved copy",
            sum(len(part) for part in parts) + len(parts) - 1,
            store.directory,
            exc,
        )
        return (None, None, 0) if saved is None else (saved.path, None, saved.lines)
