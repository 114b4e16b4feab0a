"""QwenPaw 2.2.x host: copaw-context's AgentScope 2.x middleware in QwenPaw's agents.

QwenPaw 2.2 builds a new agent for every request and picks no context manager by name; its
plugins add middleware factories and runtime hooks. The shipped plugin (``plugin/``,
installed with ``copaw-context qwenpaw install``) registers :class:`Middlewares` (our
middleware, :class:`QwenPawHook`, in every agent whose agent.json has
``light_context_config.strategy: "native"``), :class:`AgentBuilt` (QwenPaw's own tool-result
pruning taken off those agents) and :class:`ChatCommands` (``/compact [note]``,
``/context``, ``/clear`` and ``/new`` answered by copaw-context). See the README, "Coming
from QwenPaw".
"""

from __future__ import annotations

from copaw_context.qwenpaw2.agent_built import AgentBuilt, leave_tool_results_to_us, our_hook
from copaw_context.qwenpaw2.commands import ROUTED, ChatCommands
from copaw_context.qwenpaw2.factory import Middlewares
from copaw_context.qwenpaw2.hook import STATE_KEY, QwenPawHook
from copaw_context.qwenpaw2.plugin_entry import PLUGIN_ID, CopawContextPlugin
from copaw_context.qwenpaw2.window import (
    MODEL_SOURCE,
    QWENPAW_DEFAULT_MAX_INPUT_LENGTH,
    qwenpaw_window,
)

__all__ = [
    "MODEL_SOURCE",
    "PLUGIN_ID",
    "QWENPAW_DEFAULT_MAX_INPUT_LENGTH",
    "ROUTED",
    "STATE_KEY",
    "AgentBuilt",
    "ChatCommands",
    "CopawContextPlugin",
    "Middlewares",
    "QwenPawHook",
    "leave_tool_results_to_us",
    "our_hook",
    "qwenpaw_window",
]
