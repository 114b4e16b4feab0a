"""What the 2.x middleware puts into a reply stream: command answers and status lines."""

from __future__ import annotations

from typing import Any

from agentscope.event import (
    CustomEvent,
    ReplyEndEvent,
    ReplyStartEvent,
    TextBlockDeltaEvent,
    TextBlockEndEvent,
    TextBlockStartEvent,
)
from agentscope.message import AssistantMsg, TextBlock

from copaw_context.core.host.session_base import take_status

__all__ = ["STATUS_EVENT", "reply_events", "status_events"]

STATUS_EVENT = "copaw_context_status"
"""``CustomEvent.name`` of a status line (``show_status``); ``value["text"]`` is the line."""


def reply_events(agent: Any, text: str) -> list[Any]:
    """A command's answer as the events a streaming client expects, then the final message."""
    block = TextBlock(text=text)
    msg = AssistantMsg(name=agent.name, content=[block])
    session, reply = str(agent.state.session_id), msg.id
    return [
        ReplyStartEvent(session_id=session, reply_id=reply, name=agent.name),
        TextBlockStartEvent(reply_id=reply, block_id=block.id),
        TextBlockDeltaEvent(reply_id=reply, block_id=block.id, delta=text),
        TextBlockEndEvent(reply_id=reply, block_id=block.id),
        ReplyEndEvent(session_id=session, reply_id=reply),
        msg,
    ]


def status_events(scratch: dict[str, Any]) -> list[CustomEvent]:
    """The status lines waiting in an agent's scratch, as events (and forgotten there)."""
    return [CustomEvent(name=STATUS_EVENT, value={"text": line}) for line in take_status(scratch)]
