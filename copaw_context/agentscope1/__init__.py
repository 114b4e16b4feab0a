"""AgentScope 1.x adapter: ``MemoryCompactionHook`` attached to a ``ReActAgent``.

The same ``ContextEngine`` as the 2.x adapter, reached through 1.x's instance hooks
(``pre_reasoning``, ``post_acting``), a wrapped ``reply`` (chat commands), and wrapped
``formatter`` and ``model`` (MEMORY.md in the system prompt; usage and overflow recovery).
"""

from __future__ import annotations

from copaw_context.agentscope1.attach import HOOK_NAME, attach
from copaw_context.agentscope1.hook import MemoryCompactionHook, attached_hook
from copaw_context.agentscope1.messages import (
    ARCHIVE_FORM,
    METADATA_KEY,
    is_pinned,
    part_keys,
    pin_message,
)
from copaw_context.agentscope1.session import AgentScope1Session
from copaw_context.agentscope1.state import STATE_ATTRIBUTE
from copaw_context.agentscope1.summariser import AgentScope1Summariser
from copaw_context.core.context.report import TokenReport
from copaw_context.core.host.hook_base import token_report

__all__ = [
    "ARCHIVE_FORM",
    "HOOK_NAME",
    "METADATA_KEY",
    "STATE_ATTRIBUTE",
    "AgentScope1Session",
    "AgentScope1Summariser",
    "MemoryCompactionHook",
    "TokenReport",
    "attach",
    "attached_hook",
    "is_pinned",
    "part_keys",
    "pin_message",
    "token_report",
]
