"""Status lines a chat shows around an automatic compaction (``show_status``).

QwenPaw prints "Context compaction started..." before a compaction and "completed" or
"failed" after it; a user coming from it expects to see when the context was compacted and
what it cost. The lines are made from the engine's events, so they say exactly what the
events (the ``copaw_context`` logger, ``on_event``) say; the host only displays them.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from copaw_context.core.events import ContextEvent

if TYPE_CHECKING:
    from copaw_context.core.host.protocol import HostSession

__all__ = ["show_status", "status_line"]

logger = logging.getLogger("copaw_context")


def _pct(tokens: int, window: int) -> str:
    return f"{100 * tokens / max(1, window):.1f}%"


def _started(event: ContextEvent) -> str:
    total = event.messages_compacted + event.messages_kept
    return (
        "🔄 Context compaction started... Context Status: "
        f"📝 {event.tokens_before} / {event.window_tokens} "
        f"({_pct(event.tokens_before, event.window_tokens)}) "
        f"💬 {total} msgs -> compact({event.messages_compacted}) + keep({event.messages_kept})"
    )


def _done(event: ContextEvent) -> str:
    where = f" to {event.archive_files[-1]}" if event.archive_files else ""
    figures = (
        f"📝 {event.tokens_before} -> {event.tokens_after} / {event.window_tokens} tokens "
        f"({_pct(event.tokens_after, event.window_tokens)}) "
        f"💬 {event.messages_compacted} msgs archived{where}, {event.messages_kept} kept"
    )
    if event.fallback_reason:
        return (
            "⚠️ Context compaction completed with the extractive summary "
            f"({event.fallback_reason}). {figures}"
        )
    return f"✅ Context compaction completed! {figures}"


def status_line(event: ContextEvent) -> str | None:
    """The line a chat shows for ``event``, or None when the event is not shown."""
    if event.kind == "compaction_started":
        return _started(event)
    if event.kind == "compaction":
        return _done(event)
    if event.kind == "compaction_failed":
        return f"❌ Context compaction failed ({event.message}). Nothing was removed."
    if event.kind == "truncation":
        return (
            f"✂️ Context compaction: {event.message}. 📝 {event.tokens_before} -> "
            f"{event.tokens_after} / {event.window_tokens} tokens"
        )
    if event.kind == "compactor_paused":
        return f"⏸️ Context compactor paused: {event.message}."
    if event.kind == "overflow_recovery":
        return f"⚠️ The model rejected the input as too long: {event.message}"
    return None


async def show_status(host: HostSession, event: ContextEvent) -> None:
    """Have the host show the line of an automatic event (a ``/compact`` answers in its reply);
    a host that cannot show it is logged, never raised."""
    line = None if event.trigger == "command" else status_line(event)
    if line is None:
        return
    try:
        await host.show_status(line)
    except Exception:
        logger.exception("copaw-context: could not show the status line")
