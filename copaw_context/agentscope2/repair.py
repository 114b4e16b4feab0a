"""The 2.x model input with its tool pairing repaired.

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

from copaw_context.core.planning.pair_repair import (
    Missing,
    RepairBlock,
    is_request,
    log_repairs,
    plan_repair,
)

__all__ = ["repaired_messages"]


def _block(block: Any) -> RepairBlock:
    if isinstance(block, ToolCallBlock):
        return RepairBlock("call", block.id)
    if isinstance(block, ToolResultBlock):
        return RepairBlock("result", block.id)
    if isinstance(block, HintBlock):
        return RepairBlock("hint")
    return RepairBlock("other")


def _blocks(msg: Msg) -> list[Any]:
    content = msg.content
    return list(content) if isinstance(content, list) else []


def repaired_messages(messages: Sequence[Msg], seen: MutableSet[str]) -> list[Msg] | None:
    """``messages`` with their tool pairing repaired, or None when they need no repair;
    each repair is logged once (``seen``)."""
    contents = [_blocks(m) for m in messages]
    views = [[_block(b) for b in blocks] for blocks in contents]
    requests = [is_request(m.role, view) for m, view in zip(messages, views, strict=True)]
    plan = plan_repair(views, requests=requests, inline_results=True)
    if plan is None:
        return None
    log_repairs(plan, [m.id for m in messages], seen)
    out: list[Msg] = []
    for index, planned in enumerate(plan.messages):
        if planned.source is None:  # not made with inline results; kept for completeness
            source = messages[planned.after]
        else:
            source = messages[planned.source]
            if not plan.changed(index, len(contents[planned.source])):
                out.append(source)
                continue
        blocks: list[Any] = []
        for ref in planned.blocks:
            if isinstance(ref, Missing):
                call = contents[ref.call[0]][ref.call[1]]
                blocks.append(
                    ToolResultBlock(
                        id=plan.renamed.get(ref.call, call.id),
                        name=call.name,
                        output=[TextBlock(text=ref.text)],
                        state=ToolResultState.RUNNING
                        if ref.unfinished
                        else ToolResultState.INTERRUPTED,
                    )
                )
                continue
            block = contents[ref[0]][ref[1]]
            new_id = plan.renamed.get(ref)
            blocks.append(block.model_copy(update={"id": new_id}) if new_id else block)
        out.append(source.model_copy(update={"content": blocks}))
    return out
