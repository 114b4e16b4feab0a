"""``QwenPawHook``: the 1.x hook as QwenPaw's context manager uses it.

The same ``MemoryCompactionHook`` as for any AgentScope 1.x agent, with what differs inside
QwenPaw:

- the window is QwenPaw's (``window.py``: the active model's size unless agent.json says
  otherwise);
- the per-session state is the memory's (``CopawAgentContext.copaw_state``), not an agent
  attribute: the manager points the agent's attribute at it (:func:`share_memory_state`);
- no tools of its own at attach time: the manager registers ``read_file`` per agent, over
  that agent's own QwenPaw ``read_file`` (``read_file.py``); long-term memory is QwenPaw's
  memory manager (ReMe), so copaw-context's own memory and its tools are off;
- :class:`CommandAgent` is what the engine reads of an agent when QwenPaw runs a command
  without one (its command path loads only the session's memory).
"""

from __future__ import annotations

import os
from typing import Any

from agentscope.message import Msg
from agentscope.tool import Toolkit

from copaw_context.agentscope1 import STATE_ATTRIBUTE, AgentScope1Session, MemoryCompactionHook
from copaw_context.core.config.running import RunningConfig
from copaw_context.core.events import EventCallback
from copaw_context.core.host.protocol import Window
from copaw_context.qwenpaw.config import without_own_memory
from copaw_context.qwenpaw.context import CopawAgentContext
from copaw_context.qwenpaw.window import qwenpaw_window

__all__ = ["CommandAgent", "QwenPawHook", "share_memory_state"]

_THINKING_CACHE = 64  # formatters whose thinking policy is remembered


def share_memory_state(agent: Any) -> None:
    """Make ``agent``'s state attribute the memory's state (one dict, saved with the memory)."""
    memory = agent.memory
    if isinstance(memory, CopawAgentContext):
        setattr(agent, STATE_ATTRIBUTE, memory.copaw_state)


class CommandAgent:
    """What the engine reads of a QwenPaw agent (name, memory, model, formatter, prompt,
    tools), for a command QwenPaw runs without building one. ``model`` and ``formatter`` may
    be None when only the archive is written."""

    def __init__(
        self,
        name: str,
        memory: CopawAgentContext,
        *,
        model: Any = None,
        formatter: Any = None,
        sys_prompt: str = "",
        toolkit: Any = None,
    ) -> None:
        self.name = name
        self.memory = memory
        self.model = model
        self.formatter = formatter
        self.sys_prompt = sys_prompt
        self.toolkit = toolkit if toolkit is not None else Toolkit()
        setattr(self, STATE_ATTRIBUTE, memory.copaw_state)

    async def print(self, msg: Msg, last: bool = True, speech: Any = None) -> None:
        """Status lines have no chat to go to here (QwenPaw writes the command's reply)."""


class QwenPawHook(MemoryCompactionHook):
    """The 1.x hook for the agents of one QwenPaw workspace (``agent_id``)."""

    def __init__(
        self,
        config: RunningConfig,
        workspace_dir: str | os.PathLike[str],
        agent_id: str,
        *,
        on_event: EventCallback | None = None,
    ) -> None:
        super().__init__(without_own_memory(config), workspace_dir, on_event=on_event)
        self.agent_id = agent_id

    def window(self, agent: Any) -> Window:
        """QwenPaw's window for this workspace's agent (see ``window.py``)."""
        return qwenpaw_window(self.config, self.agent_id)

    def model_window(self, agent: Any, context_size: Any) -> Window:
        """The same window for each session (the model's own size is QwenPaw's default)."""
        return self.window(agent)

    async def session(self, agent: Any) -> AgentScope1Session:
        """The engine's view of ``agent``; the formatter probe cache is kept small (QwenPaw
        builds a formatter for every request: the cache is keyed by the formatter)."""
        if len(self._thinking) > _THINKING_CACHE:
            self._thinking.clear()
        return await super().session(agent)

    def tool_functions(self) -> list[Any]:
        """None at attach time: the manager registers ``read_file`` over each agent's own."""
        return []
