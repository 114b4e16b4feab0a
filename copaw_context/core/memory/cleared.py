"""The summaries that ``/clear`` and ``/new`` remove from the context, kept for recall.

Until a clear, a session's bare summary lives in its state (and the context); the clear drops
it. :func:`keep_cleared_summary` appends it first to ``<dialog_dir>/summaries/YYYY-MM-DD.md``
(one entry per clear, fsynced, under the file's lock, never through a link out of the
workspace), where ``memory_search`` finds it and ``read_file`` reads it whole from the
entry's first line::

    # /clear · 2026-05-01T10:00:00+00:00 · session s1 · agent friday

    ## Goal
    ...

Kept forever, like the dialog archive. Without a DSN the day's file is appended through the
workspace's file store (``FileStore.append_text``, beyond the protocol). With a PostgreSQL
store each day's file is a stream of lines every replica shares (:class:`SummaryCopies`), so
another worker's ``memory_search`` finds what a ``/clear`` removed on this one.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from copaw_context.core.events import CompactionRecord
from copaw_context.core.memory._io import append_bytes, locked
from copaw_context.core.memory.shared import LogCopies
from copaw_context.core.store.files import FileStore
from copaw_context.core.store.lines import folder_of
from copaw_context.core.store.protocol import StreamRecord

__all__ = ["CLEARED_DIR", "SummaryCopies", "cleared_entry", "keep_cleared_summary"]

logger = logging.getLogger("copaw_context")

CLEARED_DIR = "summaries"
_LOCK_TIMEOUT = 30.0
_ENTRY_LIKE = re.compile(r"^(# /(?:clear|new) · )", re.MULTILINE)
_FIELD = re.compile(r"[\s·]+")


class SummaryCopies(LogCopies):
    """The store's days of cleared summaries, copied into ``<dialog_dir>/summaries/``."""

    what = "cleared summaries"
    names = re.compile(r"\d{4}-\d{2}-\d{2}\.md")

    def lock(self, path: Path) -> Path:
        return self.directory / ".lock"


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
    *,
    shared: SummaryCopies | None = None,
    files: FileStore | None = None,
) -> Path | None:
    """Append the summary of a ``/clear`` or ``/new`` ``record`` to today's file (UTC date);
    the file's path, or None when the record carries no summary. Raises ``OSError`` (e.g.
    :class:`~.confine.OutsideWorkspaceError`) when it cannot be written. With ``shared``
    (a PostgreSQL store) the entry's lines go to the day's stream, then its local copy (the
    local file alone while the store is down). The file is appended through ``files`` (the
    workspace's file store: ``append_text``, under the same lock), else by the same file code
    called here (no store, or a folder that is no key of it)."""
    if record.trigger not in ("clear", "new") or not (record.summary or "").strip():
        return None
    when = datetime.fromtimestamp(clock(), UTC)
    folder = workspace / dialog_dir / CLEARED_DIR
    path = folder / f"{when.date().isoformat()}.md"
    payload = cleared_entry(record, when).encode("utf-8", "surrogatepass")
    if shared is not None and await _shared_append(shared, path, record, when, payload):
        return path

    local = folder_of(files, workspace, folder)
    if local is not None:  # the lock opens (and makes) the folder without following a link
        store, key = local
        await store.append_text(f"{key}/{path.name}", payload, lock=folder / ".lock")
        return path

    def write() -> None:
        with locked(folder / ".lock", _LOCK_TIMEOUT, workspace):
            append_bytes(path, payload, workspace=workspace)

    await asyncio.to_thread(write)
    return path


async def _shared_append(
    shared: SummaryCopies, path: Path, record: CompactionRecord, when: datetime, payload: bytes
) -> bool:
    """The entry's lines into the day's stream, then its local copy; ``False`` (logged) when
    the store cannot take them: the local file keeps the entry instead."""
    store = await shared.opener.store()
    stream = f"{shared.folder}/{path.name}"
    entry = f"{record.session_id}:{when.isoformat()}"  # one clear: its lines once by key
    lines = payload.split(b"\n")[:-1]
    try:
        if store is None:
            raise OSError("the workspace store is unavailable")
        await store.append(
            [StreamRecord(stream, f"{entry}:{i}", line) for i, line in enumerate(lines)]
        )
    except Exception as error:
        logger.warning("copaw-context: the cleared summary is kept in the local file: %s", error)
        return False
    await shared.refresh([stream])
    return True
