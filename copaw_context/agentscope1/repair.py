"""The 1.x model input with its tool pairing repaired.

See :mod:`copaw_context.core.planning.pair_repair`.

The agent's memory is not changed: the repaired list holds the same ``Msg`` objects where
nothing changed and copies where something did. Moved and synthetic results go in a system
message of their own right after their call's message, as ``ReActAgent`` stores results.
"""

from __future__ import annotations

from collections.abc import MutableSet, Sequence
from typing import Any

from agentscope.message import Msg

from copaw_context.agentscope1.messages import blocks_of
from copaw_context.core.planning.pair_repair import (
    Missing,
    RepairBlock,
    is_request,
    log_repairs,
    plan_repair,
)

__all__ = ["repaired_msgs"]

_KINDS = {"tool_use": "call", "tool_result": "result"}


def _block(block: dict[str, Any]) -> RepairBlock:
    kind = _KINDS.get(str(block.get("type")))
    call_id = block.get("id")
    if kind is None:
        return RepairBlock("other")
    return RepairBlock("call" if kind == "call" else "result", str(call_id) if call_id else None)


def _copy(source: Msg, role: str, blocks: list[dict[str, Any]]) -> Msg:
    msg = Msg(source.name if role == source.role else "system", blocks, role)  # type: ignore[arg-type]
    if role == source.role:
        msg.id, msg.metadata, msg.timestamp = source.id, source.metadata, source.timestamp
    return msg


def repaired_msgs(msgs: Sequence[Msg], seen: MutableSet[str]) -> list[Msg] | None:
    """``msgs`` with their tool pairing repaired, or None when they need no repair; each
    repair is logged once (``seen``)."""
    contents = [blocks_of(m) if isinstance(m.content, list) else [] for m in msgs]
    views = [[_block(b) for b in blocks] for blocks in contents]
    requests = [is_request(m.role, view) for m, view in zip(msgs, views, strict=True)]
    plan = plan_repair(views, requests=requests, inline_results=False)
    if plan is None:
        return None
    log_repairs(plan, [str(m.id) for m in msgs], seen)
    out: list[Msg] = []
    for index, planned in enumerate(plan.messages):
        if planned.source is not None and not plan.changed(index, len(contents[planned.source])):
            out.append(msgs[planned.source])
            continue
        blocks: list[dict[str, Any]] = []
        for ref in planned.blocks:
            if isinstance(ref, Missing):
                call = contents[ref.call[0]][ref.call[1]]
                blocks.append(
                    {
                        "type": "tool_result",
                        "id": plan.renamed.get(ref.call, call.get("id")),
                        "name": call.get("name"),
                        "output": [{"type": "text", "text": ref.text}],
                    }
                )
                continue
            block = contents[ref[0]][ref[1]]
            new_id = plan.renamed.get(ref)
            blocks.append({**block, "id": new_id} if new_id else block)
        if planned.source is None:
            out.append(_copy(msgs[planned.after], "system", blocks))
        else:
            source = msgs[planned.source]
            out.append(_copy(source, source.role, blocks))
    return out
