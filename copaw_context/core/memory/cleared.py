"""The summaries that ``/clear`` and ``/new`` remove from the context, kept for recall.

Until a clear, a session's bare summary lives in its state (and the context); the clear drops
it. :func:`keep_cleared_summary` appends it first to ``<dialog_dir>/summaries/YYYY-MM-DD.md``
(one entry per clear, fsynced, under the file's lock, never through a link out of the
workspace), where ``memory_search`` finds it and ``read_file`` reads it whole from the
entry's first line::

    # /clear · 2026-05-01T10:00:00+00:00 · session s1 · agent friday

    ## Goal
    ...

Kept forever, like the dialog archive.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from copaw_context.core.events import CompactionRecord
from copaw_context.core.memory._io import append_bytes, locked

__all__ = ["CLEARED_DIR", "cleared_entry", "keep_cleared_summary"]

CLEARED_DIR = "summaries"
_LOCK_TIMEOUT = 30.0
_ENTRY_LIKE = re.compile(r"^(# /(?:clear|new) · )", re.MULTILINE)
_FIELD = re.compile(r"[\s·]+")


def cleared_entry(record: CompactionRecord, when: datetime) -> str:
    """The Markdown entry of the summary ``record`` carries (a ``/clear`` or ``/new``)."""
    stamp = when.isoformat(timespec="seconds")
    session = _FIELD.sub(" ", record.session_id).strip() or "-"
    agent = _FIELD.sub(" ", record.agent_name).strip() or "-"
    # A summary line that looks like an entry's first line is indented: it stays body text.
    body = _ENTRY_LIKE.sub(r" \1", (record.summary or "").strip())
    return f"# /{record.trigger} · {stamp} · session {session} · agent {agent}\n\n{body}\n\n"


async def keep_cleared_summary(
    record: CompactionRecord,
    workspace: Path,
    dialog_dir: str,
    clock: Callable[[], float] = time.time,
) -> Path | None:
    """Append the summary of a ``/clear`` or ``/new`` ``record`` to today's file (UTC date);
    the file's path, or None when the record carries no summary. Raises ``OSError`` (e.g.
    :class:`~.confine.OutsideWorkspaceError`) when it cannot be written."""
    if record.trigger not in ("clear", "new") or not (record.summary or "").strip():
        return None
    when = datetime.fromtimestamp(clock(), UTC)
    folder = workspace / dialog_dir / CLEARED_DIR
    path = folder / f"{when.date().isoformat()}.md"
    payload = cleared_entry(record, when).encode("utf-8", "surrogatepass")

    def write() -> None:  # the lock opens (and makes) the folder without following a link
        with locked(folder / ".lock", _LOCK_TIMEOUT, workspace):
            append_bytes(path, payload, workspace=workspace)

    await asyncio.to_thread(write)
    return path
