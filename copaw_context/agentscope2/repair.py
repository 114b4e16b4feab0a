"""The 2.x model input with its tool pairing repaired (``core.host.repair``'s walk).

See :mod:`copaw_context.core.planning.pair_repair`.

The agent's context is not changed: the repaired list holds the same ``Msg`` objects where
nothing changed and copies where something did.
"""

from __future__ import annotations

from collections.abc import MutableSet, Sequence
from typing import Any

from agentscope.message import (
    HintBlock,
    Msg,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolResultState,
)

from copaw_context.core.host.repair import MessageFields, repaired
from copaw_context.core.planning.pair_repair import Missing, RepairBlock

__all__ = ["repaired_messages"]


class _Host(MessageFields):
    """2.x blocks for the repair (messages read as ``core.host.repair.MessageFields``)."""

    def block(self, block: Any) -> RepairBlock:
        if isinstance(block, ToolCallBlock):
            return RepairBlock("call", block.id)
        if isinstance(block, ToolResultBlock):
            return RepairBlock("result", block.id)
        if isinstance(block, HintBlock):
            return RepairBlock("hint")
        return RepairBlock("other")

    def missing(self, call: Any, new_id: str | None, missing: Missing) -> Any:
        return ToolResultBlock(
            id=call.id if new_id is None else new_id,
            name=call.name,
            output=[TextBlock(text=missing.text)],
            state=ToolResultState.RUNNING if missing.unfinished else ToolResultState.INTERRUPTED,
        )

    def renamed(self, block: Any, new_id: str) -> Any:
        return block.model_copy(update={"id": new_id})

    def rebuilt(self, source: Msg, blocks: list[Any], *, inserted: bool) -> Msg:
        # inserted: not made with inline results; kept for completeness
        return source.model_copy(update={"content": blocks})


def repaired_messages(messages: Sequence[Msg], seen: MutableSet[str]) -> list[Msg] | None:
    """``messages`` with their tool pairing repaired, or None when they need no repair;
    each repair is logged once (``seen``)."""
    return repaired(messages, _Host(), seen, inline_results=True)
