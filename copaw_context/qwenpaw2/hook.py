"""``QwenPawHook``: the AgentScope 2.x middleware as QwenPaw 2.2's agents run it.

The same ``MemoryCompactionHook`` as for any AgentScope 2.x agent, with what differs inside
QwenPaw:

- the window is QwenPaw's (``window.py``: the model's size unless agent.json says otherwise);
- long-term memory is QwenPaw's memory manager (ReMe, with its own middleware around ours),
  so copaw-context's own memory and its tools are off;
- its state sits under the plain middleware's key, ``MemoryCompactionHook``, in each agent's
  ``AgentState.middle_context``, which QwenPaw saves with the session and loads into the
  agent it builds for the next request.
"""

from __future__ import annotations

import os
from typing import Any

from copaw_context.agentscope2 import MemoryCompactionHook
from copaw_context.core.config.inside_qwenpaw import without_own_memory
from copaw_context.core.config.running import RunningConfig
from copaw_context.core.events import EventCallback
from copaw_context.core.host.protocol import Window
from copaw_context.qwenpaw2.window import qwenpaw_window

__all__ = ["STATE_KEY", "QwenPawHook"]

STATE_KEY = MemoryCompactionHook.__name__
"""The ``middle_context`` key of our state (the plain 2.x middleware's)."""


class QwenPawHook(MemoryCompactionHook):
    """The 2.x middleware for the agents of one QwenPaw 2.2 workspace."""

    def __init__(
        self,
        config: RunningConfig,
        workspace_dir: str | os.PathLike[str],
        *,
        on_event: EventCallback | None = None,
    ) -> None:
        super().__init__(without_own_memory(config), workspace_dir, on_event=on_event)

    async def get_middleware_key(self) -> str:
        """The plain middleware's key: a session is the same whichever of the two ran it."""
        return STATE_KEY

    def model_window(self, agent: Any, context_size: Any) -> Window:
        """QwenPaw's window for a model of ``context_size`` (see ``window.py``)."""
        return qwenpaw_window(self.config, context_size)
