"""The QwenPaw 2.2 plugin object: what ``plugin/plugin.py`` (the installed backend entry)
exports.

``register(api)`` adds copaw-context's middleware factory (``factory.py``: the 2.x middleware
in every agent QwenPaw builds), two runtime hooks (``commands.py``: ``/compact [note]``,
``/context``, ``/clear`` and ``/new`` answered by copaw-context before QwenPaw's own commands;
``agent_built.py``: QwenPaw's tool-result pruning left to ours on the agents we run on) and,
at QwenPaw's shutdown, the hooks' close.
"""

from __future__ import annotations

from typing import Any

from copaw_context.qwenpaw2.agent_built import AgentBuilt
from copaw_context.qwenpaw2.commands import ChatCommands
from copaw_context.qwenpaw2.factory import Middlewares

__all__ = ["MIDDLEWARE_PRIORITY", "PLUGIN_ID", "CopawContextPlugin", "plugin"]

PLUGIN_ID = "copaw-context"
"""The plugin's id (its folder under QwenPaw's ``plugins/``)."""

MIDDLEWARE_PRIORITY = 100
"""Among plugin middlewares (lower = outer): QwenPaw's default."""


class CopawContextPlugin:
    """The plugin QwenPaw's loader calls ``register(api)`` on."""

    def __init__(self) -> None:
        self.middlewares = Middlewares()

    def register(self, api: Any) -> None:
        api.register_middleware(self.middlewares, priority=MIDDLEWARE_PRIORITY)
        api.register_runtime_hook(ChatCommands(self.middlewares))
        api.register_runtime_hook(AgentBuilt())
        api.register_shutdown_hook(hook_name="copaw_context_close", callback=self.middlewares.close)


plugin = CopawContextPlugin()
