"""A host's model input with its tool pairing repaired (see
:mod:`copaw_context.core.planning.pair_repair` for what is repaired and why).

The walk is the same for every host: list each message's blocks as ``RepairBlock`` s, plan,
log each repair once, and build the input from the plan, reusing every message the plan
leaves as it is and copying the others. An adapter supplies a :class:`RepairHost`: how its
messages and blocks read, and how a synthetic result, a renamed block and a rebuilt
message are made in its types (:class:`DictRepairHost` does all but the last for dict-block
messages, :mod:`.dict_blocks`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import MutableSet, Sequence
from typing import Any, Protocol, TypeVar

from copaw_context.core.host.dict_blocks import blocks_of
from copaw_context.core.planning.pair_repair import (
    Missing,
    RepairBlock,
    is_request,
    log_repairs,
    plan_repair,
)

__all__ = ["DictRepairHost", "MessageFields", "RepairHost", "repaired"]

M = TypeVar("M")


class RepairHost(Protocol[M]):
    """A host's messages (``M``) and blocks, as the repair reads and makes them."""

    def blocks(self, msg: M) -> list[Any]:
        """The message's blocks (none for a message whose content is not a list)."""
        ...

    def block(self, block: Any) -> RepairBlock:
        """A block as the repair sees it (a call or a result with its id, a hint, other)."""
        ...

    def msg_id(self, msg: M) -> str: ...

    def role(self, msg: M) -> str: ...

    def missing(self, call: Any, new_id: str | None, missing: Missing) -> Any:
        """The synthetic result (``missing.text``) of ``call``, under ``new_id`` when the
        call was renamed (else the call's own id)."""
        ...

    def renamed(self, block: Any, new_id: str) -> Any:
        """A copy of a call or result block under ``new_id``."""
        ...

    def rebuilt(self, source: M, blocks: list[Any], *, inserted: bool) -> M:
        """A message holding ``blocks``: a copy of ``source``, or (``inserted``) a new
        message of results placed after ``source``."""
        ...


class MessageFields:
    """A :class:`RepairHost`'s reading of messages with an ``id``, a ``role`` and a list
    ``content`` of blocks (both AgentScope majors' ``Msg``)."""

    def blocks(self, msg: Any) -> list[Any]:
        content = msg.content
        return list(content) if isinstance(content, list) else []

    def msg_id(self, msg: Any) -> str:
        return str(msg.id)

    def role(self, msg: Any) -> str:
        return str(msg.role)


class DictRepairHost(MessageFields, ABC):
    """A :class:`RepairHost` over dict-block messages (``tool_use`` calls, ``tool_result``
    results carrying their call's id and name); the adapter makes its host's messages."""

    KINDS = {"tool_use": "call", "tool_result": "result"}

    def blocks(self, msg: Any) -> list[Any]:
        return blocks_of(msg) if isinstance(msg.content, list) else []

    def block(self, block: dict[str, Any]) -> RepairBlock:
        kind = self.KINDS.get(str(block.get("type")))
        call_id = block.get("id")
        if kind is None:
            return RepairBlock("other")
        return RepairBlock(
            "call" if kind == "call" else "result", str(call_id) if call_id else None
        )

    def missing(self, call: dict[str, Any], new_id: str | None, missing: Missing) -> Any:
        return {
            "type": "tool_result",
            "id": call.get("id") if new_id is None else new_id,
            "name": call.get("name"),
            "output": [{"type": "text", "text": missing.text}],
        }

    def renamed(self, block: dict[str, Any], new_id: str) -> Any:
        return {**block, "id": new_id}

    @abstractmethod
    def rebuilt(self, source: Any, blocks: list[Any], *, inserted: bool) -> Any:
        """See :meth:`RepairHost.rebuilt`."""


def repaired(
    messages: Sequence[M], host: RepairHost[M], seen: MutableSet[str], *, inline_results: bool
) -> list[M] | None:
    """``messages`` with their tool pairing repaired, or None when they need no repair; each
    repair is logged once (``seen``). ``inline_results``: results stay in their call's
    message (else moved and synthetic results go in a message of their own after it)."""
    contents = [host.blocks(m) for m in messages]
    views = [[host.block(b) for b in blocks] for blocks in contents]
    requests = [is_request(host.role(m), view) for m, view in zip(messages, views, strict=True)]
    plan = plan_repair(views, requests=requests, inline_results=inline_results)
    if plan is None:
        return None
    log_repairs(plan, [host.msg_id(m) for m in messages], seen)
    out: list[M] = []
    for index, planned in enumerate(plan.messages):
        if planned.source is not None and not plan.changed(index, len(contents[planned.source])):
            out.append(messages[planned.source])
            continue
        blocks: list[Any] = []
        for ref in planned.blocks:
            if isinstance(ref, Missing):
                call = contents[ref.call[0]][ref.call[1]]
                blocks.append(host.missing(call, plan.renamed.get(ref.call), ref))
                continue
            block = contents[ref[0]][ref[1]]
            new_id = plan.renamed.get(ref)
            blocks.append(host.renamed(block, new_id) if new_id else block)
        if planned.source is None:
            out.append(host.rebuilt(messages[planned.after], blocks, inserted=True))
        else:
            out.append(host.rebuilt(messages[planned.source], blocks, inserted=False))
    return out
