"""QwenPaw's memory manager beside copaw-context: long-term memory stays QwenPaw's.

QwenPaw's own context manager calls its memory manager (ReMe by default) at four places;
ours does the same, so MEMORY.md, the daily logs, ``memory_search`` and the dream keep
working as before:

- before a reply, ``auto_memory_search`` (when enabled in agent.json) may add recalled
  memory to the request (:func:`search_before_reply`);
- after a reply, ``auto_memory`` (every ``auto_memory_interval`` user messages);
- after an automatic compaction, ``summarize_when_compact`` with what left the context; after
  ``/compact``, ``add_summarize_task`` (as QwenPaw's ``/compact`` does)
  (:class:`MemoryForwarder`, a compaction listener of the engine).

Requests from cron jobs and the heartbeat are left out of the memory, as QwenPaw does.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Iterator
from typing import Any

from agentscope.message import Msg

from copaw_context.core.events import CompactionRecord
from copaw_context.core.transcript import TranscriptMessage

__all__ = [
    "AUTOMATION_SOURCES",
    "MemoryForwarder",
    "as_msg",
    "is_automation",
    "memory_after_reply",
    "search_before_reply",
]

logger = logging.getLogger("copaw_context")

AUTOMATION_SOURCES = frozenset({"cron", "heartbeat"})
"""Request sources whose conversations QwenPaw keeps out of the long-term memory."""

_AUTOMATION: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "copaw_context_qwenpaw_automation", default=False
)
_QUEUED: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "copaw_context_qwenpaw_queued", default=False
)


def is_automation(agent: Any) -> bool:
    """Whether ``agent`` answers a cron job or the heartbeat (its request context says)."""
    context = getattr(agent, "_request_context", None) or {}
    source = context.get("source") if isinstance(context, dict) else None
    return str(source or "").strip().lower() in AUTOMATION_SOURCES


def as_msg(message: TranscriptMessage) -> Msg:
    """A transcript message as a 1.x ``Msg`` of text (what the memory manager summarises)."""
    lines = []
    for part in message.parts:
        if part.kind == "text":
            lines.append(part.text)
        elif part.kind in ("tool_call", "tool_result", "thinking"):
            tool = f" {part.tool_name}" if part.tool_name else ""
            lines.append(f"[{part.kind}{tool}] {part.text}")
    return Msg(
        message.name or message.role,
        "\n".join(lines),
        message.role,
        timestamp=message.timestamp or None,
    )


async def search_before_reply(agent: Any, kwargs: dict[str, Any]) -> dict[str, Any] | None:
    """QwenPaw's ``pre_reply``: recalled memory for the request, skipped for commands."""
    _AUTOMATION.set(is_automation(agent))
    msg = kwargs.get("msg")
    if msg is None or (isinstance(msg, list) and not msg):
        return None
    last = msg[-1] if isinstance(msg, list) else msg
    query = last.get_text_content() if isinstance(last, Msg) else None
    handler = getattr(agent, "command_handler", None)
    if handler is not None and handler.is_command(query):
        return None
    manager = getattr(agent, "memory_manager", None)
    if manager is None:
        return None
    try:
        result = await manager.auto_memory_search(msg, agent_name=agent.name)
    except Exception as exc:
        logger.warning("copaw-context: QwenPaw's memory search failed, skipped: %s", exc)
        return None
    return None if result is None else {**kwargs, **result}


async def memory_after_reply(agent: Any) -> None:
    """QwenPaw's ``post_reply``: the memory manager's periodic ``auto_memory``."""
    manager = getattr(agent, "memory_manager", None)
    if manager is None or is_automation(agent):
        return
    messages = [msg for msg, _ in agent.memory.content]
    if not messages:
        return
    try:
        await manager.auto_memory(all_messages=messages)
    except Exception as exc:
        logger.warning("copaw-context: QwenPaw's auto memory failed: %s", exc)


class MemoryForwarder:
    """The engine's compaction listener handing what left the context to QwenPaw's memory
    manager (the last one seen: a workspace has one)."""

    def __init__(self) -> None:
        self.manager: Any = None

    def saw(self, manager: Any) -> None:
        """Remember the workspace's memory manager (from an agent or the runner)."""
        if manager is not None:
            self.manager = manager

    @staticmethod
    @contextlib.contextmanager
    def queued_by_qwenpaw() -> Iterator[None]:
        """Inside: QwenPaw has queued the messages itself (its own ``/compact`` calls
        ``add_summarize_task`` before ``compact_context``), nothing is forwarded."""
        token = _QUEUED.set(True)
        try:
            yield
        finally:
            _QUEUED.reset(token)

    async def __call__(self, record: CompactionRecord) -> None:
        manager = self.manager
        if manager is None or not record.messages or _AUTOMATION.get() or _QUEUED.get():
            return
        messages = [as_msg(m) for m in record.messages]
        if record.trigger == "command":
            manager.add_summarize_task(messages=messages)
        elif record.trigger in ("auto", "overflow"):
            await manager.summarize_when_compact(messages=messages)
