"""QwenPaw 1.1.x host: copaw-context as QwenPaw's context manager.

Importing this package registers :class:`CopawContextManager` in QwenPaw's
``context_registry`` under ``"light"`` (QwenPaw's default ``context_manager_backend``), so an
unchanged agent.json selects it. The shipped plugin (``plugin/``, installed with
``copaw-context qwenpaw install``) imports it when QwenPaw starts and adds the ``/compact``
and ``/context`` control commands. See the README, "Coming from QwenPaw".
"""

from __future__ import annotations

from copaw_context.qwenpaw.commands import CONTROL_COMMANDS, ChatCommandHandler
from copaw_context.qwenpaw.context import STATE_KEY, CopawAgentContext
from copaw_context.qwenpaw.hook import CommandAgent, QwenPawHook
from copaw_context.qwenpaw.manager import BACKEND_NAME, CopawContextManager, register
from copaw_context.qwenpaw.read_file import cooperative_read_file
from copaw_context.qwenpaw.window import QWENPAW_DEFAULT_MAX_INPUT_LENGTH, qwenpaw_window

__all__ = [
    "BACKEND_NAME",
    "CONTROL_COMMANDS",
    "QWENPAW_DEFAULT_MAX_INPUT_LENGTH",
    "STATE_KEY",
    "ChatCommandHandler",
    "CommandAgent",
    "CopawAgentContext",
    "CopawContextManager",
    "QwenPawHook",
    "cooperative_read_file",
    "qwenpaw_window",
    "register",
]

register()
