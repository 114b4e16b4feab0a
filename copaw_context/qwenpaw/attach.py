"""Attaching the hook to one of QwenPaw's per-request agents.

QwenPaw builds the agent, loads its saved session, then calls ``reply``; the manager's
``pre_reply`` attaches here, after the load. What changes on the agent beyond the 1.x
``attach`` (see :mod:`copaw_context.agentscope1.attach`):

- its state attribute ``copaw_context`` is the memory's state (one dict, saved with the
  memory, so it survives QwenPaw's new agent per request and its command path); the agent's
  ``state_dict`` leaves its own copy out;
- QwenPaw's ``read_file`` is taken out of the toolkit and handed to ours, which keeps its
  parameters and calls it for every file that is not one of ours (``read_file.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from copaw_context.agentscope1 import STATE_ATTRIBUTE
from copaw_context.qwenpaw.context import CopawAgentContext
from copaw_context.qwenpaw.hook import QwenPawHook, share_memory_state
from copaw_context.qwenpaw.read_file import QwenPawReadFile, cooperative_read_file

__all__ = ["attach_to_agent"]

logger = logging.getLogger("copaw_context")

_STATE_LEFT_OUT = "_copaw_context_state_left_out"


def _take_read_file(toolkit: Any) -> QwenPawReadFile | None:
    """QwenPaw's ``read_file`` (removed from ``toolkit``), or None when it is disabled."""
    registered = toolkit.tools.get("read_file")
    if registered is None:
        return None
    toolkit.remove_tool_function("read_file")
    original: QwenPawReadFile = registered.original_func
    return original


def _leave_state_out(agent: Any) -> None:
    """The agent's ``state_dict`` without our attribute: the memory saves the state."""
    if getattr(agent, _STATE_LEFT_OUT, False):
        return
    original: Callable[[], dict[str, Any]] = agent.state_dict

    def state_dict() -> dict[str, Any]:
        state = original()
        state.pop(STATE_ATTRIBUTE, None)
        return state

    agent.state_dict = state_dict
    setattr(agent, _STATE_LEFT_OUT, True)


def attach_to_agent(hook: QwenPawHook, agent: Any) -> bool:
    """Attach ``hook`` to QwenPaw ``agent`` (True), or leave an agent whose memory is not a
    :class:`CopawAgentContext` alone (False, with a warning)."""
    if not isinstance(agent.memory, CopawAgentContext):
        logger.warning(
            "copaw-context: agent %s has a %s memory, not the context this manager made; "
            "left as it is",
            getattr(agent, "name", "?"),
            type(agent.memory).__name__,
        )
        return False
    qwenpaw_read_file = _take_read_file(agent.toolkit)
    share_memory_state(agent)  # attach finds the loaded state (no "attach first" warning)
    try:
        hook.attach(agent)
    except Exception:
        if qwenpaw_read_file is not None:  # the agent keeps QwenPaw's tool
            agent.toolkit.register_tool_function(qwenpaw_read_file)
        raise
    share_memory_state(agent)  # attach registered a copy: back to the memory's one dict
    _leave_state_out(agent)
    agent.toolkit.register_tool_function(
        cooperative_read_file(hook.read_file_tool(), qwenpaw_read_file),
        namesake_strategy="override",
        postprocess_func=hook.read_entries.postprocess,
    )
    return True
