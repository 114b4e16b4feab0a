"""Structured events of long-term memory (summaries, consolidations), logged and handed to an
optional callback, like the context manager's :class:`~copaw_context.core.events.ContextEvent`.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any, Literal

from copaw_context.core.host.protocol import CompactorModel

__all__ = [
    "MemoryEvent",
    "MemoryEventCallback",
    "MemoryEventKind",
    "MemoryModel",
    "emit_memory_event",
]

logger = logging.getLogger("copaw_context")

MemoryEventKind = Literal[
    "memory_summary",  # entries were appended to today's log
    "memory_summary_silent",  # the model found nothing worth keeping ([SILENT]) or only repeats
    "memory_summary_failed",  # the model call (or the write) failed; nothing was written
    "memory_consolidation",  # daily logs were folded into MEMORY.md (or had nothing new)
    "memory_consolidation_failed",  # nothing was changed
]


MemoryModel = CompactorModel
"""The one model call long-term memory needs: the compactor's model (``core.host``); an
adapter wraps its host's chat model once for both."""


@dataclass(frozen=True)
class MemoryEvent:
    """One thing long-term memory did."""

    kind: MemoryEventKind
    workspace: str
    message: str = ""
    entries: int = 0
    files: tuple[str, ...] = ()
    method: str = ""  # "llm" | "extractive" | ""
    fallback_reason: str | None = None
    trigger: str = ""
    session_id: str = ""
    duration_seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """The event as a JSON-able dict."""
        return asdict(self)


MemoryEventCallback = Callable[[MemoryEvent], Awaitable[None] | None]


async def emit_memory_event(event: MemoryEvent, callback: MemoryEventCallback | None) -> None:
    """Log ``event`` and hand it to ``callback``; a failing callback is logged, not raised."""
    level = logging.WARNING if event.kind.endswith("_failed") else logging.INFO
    logger.log(level, "copaw-context %s: %s", event.kind, event.as_dict())
    if callback is None:
        return
    try:
        result = callback(event)
        if inspect.isawaitable(result):
            await result
    except Exception:
        logger.exception("copaw-context: the memory event callback failed")
