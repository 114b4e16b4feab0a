"""AgentScope 2.x adapter: ``MemoryCompactionHook`` (a ``MiddlewareBase``) over the engine."""

from __future__ import annotations

from copaw_context.agentscope2.attach import attach
from copaw_context.agentscope2.messages import (
    METADATA_KEY,
    AsMsgHandler,
    ContextCheck,
    is_pinned,
    pin_message,
)
from copaw_context.agentscope2.middleware import MemoryCompactionHook
from copaw_context.agentscope2.session import AgentScope2Session
from copaw_context.agentscope2.summariser import AgentScopeSummariser
from copaw_context.agentscope2.tools import make_read_file_tool
from copaw_context.core.context.report import TokenReport
from copaw_context.core.host.hook_base import token_report

__all__ = [
    "METADATA_KEY",
    "AgentScope2Session",
    "AgentScopeSummariser",
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
