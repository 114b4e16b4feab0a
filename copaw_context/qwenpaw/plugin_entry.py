"""The QwenPaw plugin object: what ``plugin/plugin.py`` (the installed backend entry) exports.

Importing this module imports :mod:`copaw_context.qwenpaw`, which registers the manager as
``"light"`` in QwenPaw's ``context_registry`` at once, before any await: QwenPaw loads
plugins alongside the agents' start, and a registration later than the import would lose
that race. ``register(api)`` (synchronous) adds the control commands ``/compact`` and
``/context``.
"""

from __future__ import annotations

from typing import Any

from copaw_context.qwenpaw.commands import CONTROL_COMMANDS, ChatCommandHandler
from copaw_context.qwenpaw.manager import register as register_manager

__all__ = ["PLUGIN_ID", "CopawContextPlugin", "plugin"]

PLUGIN_ID = "copaw-context"
"""The plugin's id (its folder under QwenPaw's ``plugins/``)."""


class CopawContextPlugin:
    """The plugin QwenPaw's loader calls ``register(api)`` on."""

    def register(self, api: Any) -> None:
        register_manager()  # again, in case QwenPaw's own registration ran after ours
        for name in CONTROL_COMMANDS:
            api.register_control_command(ChatCommandHandler(name), priority_level=10)


plugin = CopawContextPlugin()
