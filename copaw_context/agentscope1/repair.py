"""The 1.x model input with its tool pairing repaired (``core.host.repair``'s walk).

See :mod:`copaw_context.core.planning.pair_repair`.

The agent's memory is not changed: the repaired list holds the same ``Msg`` objects where
nothing changed and copies where something did. Moved and synthetic results go in a system
message of their own right after their call's message, as ``ReActAgent`` stores results.
"""

from __future__ import annotations

from collections.abc import MutableSet, Sequence
from typing import Any

from agentscope.message import Msg

from copaw_context.core.host.repair import DictRepairHost, repaired

__all__ = ["repaired_msgs"]


def _copy(source: Msg, role: str, blocks: list[dict[str, Any]]) -> Msg:
    msg = Msg(source.name if role == source.role else "system", blocks, role)  # type: ignore[arg-type]
    if role == source.role:
        msg.id, msg.metadata, msg.timestamp = source.id, source.metadata, source.timestamp
    return msg


class _Host(DictRepairHost):
    """1.x messages for the repair (the dict blocks are ``core.host.repair``'s)."""

    def rebuilt(self, source: Msg, blocks: list[Any], *, inserted: bool) -> Msg:
        return _copy(source, "system" if inserted else source.role, blocks)


def repaired_msgs(msgs: Sequence[Msg], seen: MutableSet[str]) -> list[Msg] | None:
    """``msgs`` with their tool pairing repaired, or None when they need no repair; each
    repair is logged once (``seen``)."""
    return repaired(msgs, _Host(), seen, inline_results=False)
