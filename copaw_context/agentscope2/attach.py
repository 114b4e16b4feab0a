"""Attach a hook to an AgentScope 2.x agent that is already built."""

from __future__ import annotations

from typing import Any

from copaw_context.agentscope2.middleware import MemoryCompactionHook
from copaw_context.core.host.hook_base import Attached

__all__ = ["attach"]


def attach(agent: Any, hook: MemoryCompactionHook) -> Attached[MemoryCompactionHook]:
    """Add ``hook`` to ``agent``'s middlewares now, and its tools (``read_file``, memory) to
    the toolkit before the agent's next reply (at once when the result is awaited).

    Works called plainly or awaited (``await attach(agent, hook)`` gives the hook); a host
    without the middleware lists fails here. Idempotent: twice changes nothing; another
    copaw-context hook already on ``agent`` is refused (ValueError), as on 1.x.
    """
    return hook.attach(agent)
