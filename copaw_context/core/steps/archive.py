"""Writing what leaves the context: archive first, then commit, and never lose a message.

Messages are fsynced to ``dialog/YYYY-MM-DD.jsonl`` before they leave the context, inside a
section shielded from cancellation, and the saved outputs they name before them (the background
group commit, :mod:`copaw_context.core.workspace.durable`, is awaited first). When the archive
cannot be written (disk full, a read-only workspace), the messages are kept whole in the agent's
session state (a pending buffer the host saves with the session) and the context is still
compacted, so the model's window holds; the buffer is written out as soon as the archive is
writable again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Sequence
from typing import TypeVar

from copaw_context.core.archive.store import ArchivedFile
from copaw_context.core.context.state import SessionState
from copaw_context.core.context.step import Turn
from copaw_context.core.context.step_context import StepContext
from copaw_context.core.errors import ArchiveError
from copaw_context.core.events import ContextEvent
from copaw_context.core.host.protocol import ArchiveRecord, HostSession
from copaw_context.core.summary import Summary, render_summary_message, split_summary_message
from copaw_context.core.workspace import durable

__all__ = [
    "FlushPendingArchive",
    "archive_and_apply",
    "archive_records",
    "flush_pending",
    "guide_after",
    "path_guide",
    "previous_summary",
    "recall_tool",
    "shielded",
    "write_records",
]

logger = logging.getLogger("copaw_context")

_T = TypeVar("_T")
_GUIDE_FILES = 7
_FLUSH_INTERVAL_SECONDS = 60.0


async def shielded(operation: Awaitable[_T]) -> _T:
    """Run ``operation`` to the end even if the caller is cancelled meanwhile."""
    task = asyncio.ensure_future(operation)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        await task
        raise


async def write_records(
    ctx: StepContext, host: HostSession, records: Sequence[ArchiveRecord]
) -> list[ArchivedFile] | None:
    """Append the pending buffer and ``records`` to the archive.

    Returns the files written, or None when the archive is unwritable: then everything is
    (still) in the pending buffer of the session state, and an event says so.
    """
    state = ctx.state(host)
    pending = _readable_pending(state)
    batch = [*pending, *records]
    if not batch:
        return []
    try:
        written = await ctx.archive(host).append(
            [r.message for r in batch],
            [r.timestamp for r in batch],
            [r.archive_id for r in batch],
            forms=[r.form for r in batch],
            part_keys=[r.part_keys for r in batch],
        )
    except ArchiveError as exc:
        state.pending_archive = [r.as_dict() for r in batch]
        ctx.scratch(host).pending_tried = ctx.now()
        await ctx.emit(
            ContextEvent(
                kind="archive_deferred",
                agent_name=host.agent_name,
                session_id=host.session_id,
                message=(
                    f"the dialog archive could not be written ({exc}); {len(batch)} message(s) "
                    "are kept in the session state and will be written when it is writable"
                ),
            )
        )
        return None
    if pending:
        state.pending_archive = []
        await ctx.emit(
            ContextEvent(
                kind="archive_flushed",
                agent_name=host.agent_name,
                session_id=host.session_id,
                message=f"{len(pending)} deferred message(s) written to the dialog archive",
            )
        )
    return written


def _readable_pending(state: SessionState) -> list[ArchiveRecord]:
    """The pending buffer's records; a malformed one (a hand-edited or corrupt saved state)
    moves, as it is, to ``pending_archive_unreadable`` in the state, where it stays: it must
    not stop every later archive write, and nothing is dropped."""
    readable, unreadable = [], []
    saved = state.data.get("pending_archive")
    for raw in saved if isinstance(saved, list) else []:
        try:
            if not isinstance(raw, dict):
                raise TypeError(f"not an object: {type(raw).__name__}")
            readable.append(ArchiveRecord.from_dict(raw))
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            unreadable.append(raw)
            logger.warning("copaw-context: a pending archive record is malformed (%s)", error)
    if unreadable:
        kept = state.data.get("pending_archive_unreadable")
        state.data["pending_archive_unreadable"] = [
            *(kept if isinstance(kept, list) else []),
            *unreadable,
        ]
        state.pending_archive = [r.as_dict() for r in readable]
    return readable


async def flush_pending(ctx: StepContext, host: HostSession) -> None:
    """Try to write the pending buffer (at most once a minute while it fails)."""
    if not ctx.state(host).pending_archive:
        return
    last = ctx.scratch(host).pending_tried
    if last is not None and ctx.now() - last < _FLUSH_INTERVAL_SECONDS:
        return
    await shielded(write_records(ctx, host, []))


async def archive_and_apply(
    ctx: StepContext,
    host: HostSession,
    records: list[ArchiveRecord],
    keep: Sequence[tuple[int, Sequence[int] | None]],
    summary: Summary,
) -> list[tuple[str, int]]:
    """Archive (fsynced) first, or keep in the pending buffer; then commit the context with
    ``summary`` (its text, in the session state and the summary message)."""
    language = ctx.settings.language
    text = summary.text()
    recall = recall_tool(ctx)
    state = ctx.state(host)

    async def archive_then_apply() -> list[tuple[str, int]]:
        # The saved outputs the dropped messages name are on disk before they are dropped
        # (the archive's append waits too; this also covers a write kept in the state).
        await durable.durable()
        written = await write_records(ctx, host, records) or []
        # Archived (or kept in the state): commit at once, so that nothing after this point
        # can archive them again.
        await host.commit(keep)
        ctx.ledger(host).reset()
        state.summary = text
        guide = [(ctx.relative(f.path), f.lines) for f in written]
        await host.set_summary(
            render_summary_message(text, guide, language=language, recall_tool=recall)
        )
        listed = await path_guide(ctx, host)
        if listed:
            guide = listed
            await host.set_summary(
                render_summary_message(text, guide, language=language, recall_tool=recall)
            )
        return guide

    return await shielded(archive_then_apply())


async def path_guide(ctx: StepContext, host: HostSession) -> list[tuple[str, int]]:
    """The newest archive files with their line counts; best effort (the archive is written)."""
    try:
        files = await ctx.archive(host).list_files()
    except Exception as exc:  # the messages are archived and applied; the guide is a nicety
        logger.warning("copaw-context: could not list the dialog archive for the guide: %s", exc)
        return []
    # The newest files are where to look first; older ones sit beside them.
    return [(ctx.relative(f.path), f.lines) for f in files[-_GUIDE_FILES:]]


def recall_tool(ctx: StepContext) -> str | None:
    """The search tool the summary message's guide names (none without long-term memory)."""
    return "memory_search" if ctx.memory.enabled else None


async def guide_after(
    ctx: StepContext, host: HostSession, records: Sequence[ArchiveRecord]
) -> list[tuple[str, int]]:
    """The guide :func:`archive_and_apply` will list once ``records`` are archived: the
    newest day files, those the records go to included, with at most the line counts they
    will have (the summary's room is what the message around it leaves)."""
    archive = ctx.archive(host)
    try:
        files = await archive.list_files()
    except Exception:  # the guide then names the records' files alone, as a failed listing
        files = []
    lines = {f.path: f.lines for f in files}
    for path in archive.day_files([r.timestamp for r in records]):
        lines[path] = lines.get(path, 0) + len(records)
    return [(ctx.relative(path), lines[path]) for path in sorted(lines)[-_GUIDE_FILES:]]


def previous_summary(state: SessionState, host: HostSession) -> str:
    """The bare structured summary (without the dialog guide), for merging."""
    stored = state.summary
    if stored is not None:
        return stored
    text = host.summary_text()
    return split_summary_message(text) if text else ""


def archive_records(
    host: HostSession, groups: Sequence[tuple[int, Sequence[int] | None]]
) -> list[ArchiveRecord]:
    """The archive form of each (message, parts) group, in order."""
    return [host.archive_record(message, parts) for message, parts in groups]


class FlushPendingArchive:
    """Pipeline step ``flush``, first of all: what an unwritable archive kept in the session
    state is written out once the archive is writable again."""

    name = "flush"

    def __init__(self, ctx: StepContext) -> None:
        self.ctx = ctx

    async def run(self, host: HostSession, turn: Turn) -> None:
        await flush_pending(self.ctx, host)
