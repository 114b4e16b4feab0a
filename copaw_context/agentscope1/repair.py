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

from copaw_context.core.host.dict_blocks import blocks_of
from copaw_context.core.host.repair import repaired
from copaw_context.core.planning.pair_repair import Missing, RepairBlock

__all__ = ["repaired_msgs"]

_KINDS = {"tool_use": "call", "tool_result": "result"}


def _copy(source: Msg, role: str, blocks: list[dict[str, Any]]) -> Msg:
    msg = Msg(source.name if role == source.role else "system", blocks, role)  # type: ignore[arg-type]
    if role == source.role:
        msg.id, msg.metadata, msg.timestamp = source.id, source.metadata, source.timestamp
    return msg


class _Host:
    """1.x messages and dict blocks for the repair."""

    def blocks(self, msg: Msg) -> list[Any]:
        return blocks_of(msg) if isinstance(msg.content, list) else []

    def block(self, block: dict[str, Any]) -> RepairBlock:
        kind = _KINDS.get(str(block.get("type")))
        call_id = block.get("id")
        if kind is None:
            return RepairBlock("other")
        return RepairBlock(
            "call" if kind == "call" else "result", str(call_id) if call_id else None
        )

    def msg_id(self, msg: Msg) -> str:
        return str(msg.id)

    def role(self, msg: Msg) -> str:
        return str(msg.role)

    def missing(self, call: dict[str, Any], new_id: str | None, missing: Missing) -> Any:
        return {
            "type": "tool_result",
            "id": call.get("id") if new_id is None else new_id,
            "name": call.get("name"),
            "output": [{"type": "text", "text": missing.text}],
        }

    def renamed(self, block: dict[str, Any], new_id: str) -> Any:
        return {**block, "id": new_id}

    def rebuilt(self, source: Msg, blocks: list[Any], *, inserted: bool) -> Msg:
        return _copy(source, "system" if inserted else source.role, blocks)


def repaired_msgs(msgs: Sequence[Msg], seen: MutableSet[str]) -> list[Msg] | None:
    """``msgs`` with their tool pairing repaired, or None when they need no repair; each
    repair is logged once (``seen``)."""
    return repaired(msgs, _Host(), seen, inline_results=False)
