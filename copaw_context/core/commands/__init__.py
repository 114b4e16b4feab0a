"""Chat commands typed by the user: ``/compact [note]``, ``/context``, ``/clear``, ``/new``,
and QwenPaw's ``/history``, ``/dump_history [path]``, ``/load_history path``.

The host decides what counts as a command (a lone user message) and hands its text to
:func:`parse_command`; the engine runs it (:class:`Commands`) and returns the reply text,
which keeps the reference's shapes (``**Compact Complete!**`` and its figures) so QwenPaw
users see what they know.
"""

from copaw_context.core.commands.parse import (
    COMMANDS,
    ChatCommand,
    format_compact_reply,
    parse_command,
)
from copaw_context.core.commands.run import Commands

__all__ = ["COMMANDS", "ChatCommand", "Commands", "format_compact_reply", "parse_command"]
