"""Structured events emitted by the context manager (to logging and an optional callback)."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from copaw_context.core.transcript import TranscriptMessage

__all__ = ["NOT_FREEING", "CompactionRecord", "ContextEvent", "EventCallback", "emit_event"]

logger = logging.getLogger("copaw_context")

NOT_FREEING = "compaction would not free tokens"
"""How the message of a ``compaction_failed`` that changed nothing (a harmless no-op) begins."""

EventKind = Literal[
    "compaction_started",  # a compaction was planned: what will be compacted and kept
    "compaction",  # messages were summarised, archived and removed
    "truncation",  # nothing could be compacted; tool results / the request were cut instead
    "compaction_failed",  # nothing was removed (e.g. the archive could not be written)
    "compactor_paused",  # the compactor failed repeatedly; extractive summaries for a while
    "overflow_recovery",  # the provider rejected the input as too long; compacted and retried
    "archive_deferred",  # the archive could not be written; messages kept in the session state
    "archive_flushed",  # deferred messages were written to the archive
    "warning",  # e.g. the system prompt, summary and tools alone exceed the threshold
    "model_call",  # a model input measured before it is sent: its prompt-cache figure
]


@dataclass(frozen=True)
class ContextEvent:
    """One thing the context manager did, with its token figures."""

    kind: EventKind
    agent_name: str
    session_id: str
    tokens_before: int = 0
    tokens_after: int = 0
    threshold_tokens: int = 0
    window_tokens: int = 0
    messages_compacted: int = 0
    messages_kept: int = 0
    duration_seconds: float = 0.0
    method: str = ""  # "llm" | "extractive" | ""
    fallback_reason: str | None = None
    trigger: str = "auto"  # "auto" | "command"
    message: str = ""
    archive_files: tuple[str, ...] = field(default_factory=tuple)
    summary_dropped_lines: int = 0  # junk lines of the compactor's reply dropped or fixed
    summary_dropped_by_reason: dict[str, int] = field(default_factory=dict)
    """The summary lines that compaction left out or fixed, by reason: ``placeholder``,
    ``template_prefix``, ``empty``, ``duplicate``, ``notice``, ``acknowledgement``, ``json``,
    ``error_noise`` (:mod:`~copaw_context.core.summary.junk`), ``unstated``, ``moved`` (a
    constraint nobody stated, moved to Critical Context), ``no_reason``, ``not_done``
    (:mod:`~copaw_context.core.summary.rules`), ``reworded``, ``path_fixed``."""
    summary_budget_chars: int = 0  # the summary budget of that compaction (characters)
    prefix_reused_tokens: int = 0  # model_call: tokens of its common prefix with the previous input
    session_reused_share: float = 0.0  # model_call: the session's sum LCP / sum input tokens
    compactor_calls: tuple[str, ...] = field(default_factory=tuple)
    """Why each compactor model call of that compaction was made, in order (its length: the
    calls made): each stage the transcript needed, each retry and its cause."""

    def as_dict(self) -> dict[str, Any]:
        """The event as a JSON-able dict."""
        return asdict(self)


EventCallback = Callable[[ContextEvent], Awaitable[None] | None]


@dataclass(frozen=True)
class CompactionRecord:
    """What left the context in one compaction, ``/clear`` or ``/new``, for listeners such as
    the long-term memory summariser.

    ``messages`` are the removed messages as the compactor saw them (neutral transcript);
    ``summary`` is the new bare summary; for ``/clear`` and ``/new`` the summary they removed
    (``None`` when there was none).
    """

    trigger: str  # "auto" | "command" | "overflow" | "clear" | "new"
    session_id: str
    agent_name: str
    messages: tuple[TranscriptMessage, ...]
    summary: str | None
    archive_files: tuple[str, ...] = ()


async def emit_event(event: ContextEvent, callback: EventCallback | None) -> None:
    """Log ``event`` and hand it to ``callback``; a failing callback is logged, not raised."""
    warn = event.kind in ("warning", "compaction_failed", "compactor_paused")
    if event.kind == "compaction_failed" and event.message.startswith(NOT_FREEING):
        warn = False  # nothing changed and nothing was lost: not worth a warning
    level = logging.WARNING if warn else logging.INFO
    if event.kind == "model_call":
        level = logging.DEBUG  # one per model call: not worth a line at the default level
    logger.log(level, "copaw-context %s: %s", event.kind, event.as_dict())
    if callback is None:
        return
    try:
        result = callback(event)
        if inspect.isawaitable(result):
            await result
    except Exception:
        logger.exception("copaw-context: the event callback failed")
