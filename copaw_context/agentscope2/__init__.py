"""AgentScope 2.x adapter: ``MemoryCompactionHook`` (a ``MiddlewareBase``) and helpers."""

from __future__ import annotations

from copaw_context.agentscope2._attach import attach
from copaw_context.agentscope2._context_ops import TokenReport, token_report
from copaw_context.agentscope2._hook import MemoryCompactionHook
from copaw_context.agentscope2._messages import (
    METADATA_KEY,
    AsMsgHandler,
    ContextCheck,
    is_pinned,
    pin_message,
)
from copaw_context.agentscope2._tools import make_read_file_tool

__all__ = [
    "METADATA_KEY",
    "AsMsgHandler",
    "ContextCheck",
    "MemoryCompactionHook",
    "TokenReport",
    "attach",
    "is_pinned",
    "make_read_file_tool",
    "pin_message",
    "token_report",
]
