"""AgentScope 2.x messages <-> the engine's neutral views, and ``AsMsgHandler``.

In AgentScope 2.x one assistant reply is one ``Msg`` holding text, tool_call and tool_result
blocks in order, so a plan may cut through a message: the compacted head and the kept tail
become two valid messages, and the tail keeps the original id so the running reply keeps
appending to it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agentscope.message import (
    Base64Source,
    DataBlock,
    HintBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolResultState,
    URLSource,
)

from copaw_context.core.context.ledger import TokenMeter
from copaw_context.core.host.protocol import MessageView, PartView, Role
from copaw_context.core.host.protocol import archive_id as core_archive_id
from copaw_context.core.planning.context_check import plan_context
from copaw_context.core.planning.split import SplitPlan
from copaw_context.core.summary.data_label import data_label
from copaw_context.core.tokens import TokenCounter

__all__ = [
    "ARCHIVE_FORM",
    "METADATA_KEY",
    "AsMsgHandler",
    "ContextCheck",
    "ThinkingPolicy",
    "archive_id",
    "hint_text",
    "is_pinned",
    "message_view",
    "part_view",
    "pin_message",
    "tool_result_texts",
    "with_blocks",
]

METADATA_KEY = "copaw_context"
"""Key of this package's entry in ``Msg.metadata`` and ``ToolResultBlock.metadata``."""

ARCHIVE_FORM = "agentscope2.Msg"
"""How an archived message is serialised: ``Msg.model_dump(mode="json")``."""

ThinkingPolicy = bool | Callable[[ThinkingBlock], bool]
"""Whether the model's formatter sends a thinking block back: for all, or decided per block."""


def pin_message(msg: Msg) -> Msg:
    """Mark ``msg`` so that compaction never removes it (returns the same message)."""
    entry = dict(msg.metadata.get(METADATA_KEY) or {})
    entry["pinned"] = True
    msg.metadata[METADATA_KEY] = entry
    return msg


def is_pinned(msg: Msg) -> bool:
    """Whether ``msg`` was pinned with :func:`pin_message`."""
    entry = msg.metadata.get(METADATA_KEY)
    return isinstance(entry, dict) and entry.get("pinned") is True


def tool_result_texts(block: ToolResultBlock) -> list[str]:
    """The text parts of a tool result's output."""
    if isinstance(block.output, str):
        return [block.output]
    return [b.text for b in block.output if isinstance(b, TextBlock)]


def hint_text(hint: Any) -> str:
    """The text of a ``HintBlock`` (e.g. ``compress_context(instructions=...)``), or ""."""
    if not isinstance(hint, HintBlock):
        return ""
    if isinstance(hint.hint, str):
        return hint.hint.strip()
    return "\n".join(b.text for b in hint.hint if isinstance(b, TextBlock)).strip()


def part_view(block: Any, thinking: ThinkingPolicy) -> PartView:
    """One AgentScope 2.x block as the engine sees it."""
    if isinstance(block, TextBlock):
        return PartView("text", block.text)
    if isinstance(block, ThinkingBlock):
        sent = thinking if isinstance(thinking, bool) else bool(thinking(block))
        return PartView("thinking", block.thinking, sent=sent)
    if isinstance(block, HintBlock):
        data = (
            0
            if isinstance(block.hint, str)
            else sum(1 for b in block.hint if not isinstance(b, TextBlock))
        )
        return PartView("hint", hint_text(block), data_blocks=data)
    if isinstance(block, ToolCallBlock):
        return PartView(
            "tool_call",
            f"{block.name} {block.input}",
            call_id=block.id,
            tool_name=block.name,
            tool_input=block.input,
        )
    if isinstance(block, ToolResultBlock):
        return _result_view(block)
    if isinstance(block, DataBlock):
        source = block.source
        label = data_label(
            url=str(source.url) if isinstance(source, URLSource) else None,
            data=source.data if isinstance(source, Base64Source) else None,
            media_type=source.media_type,
            name=block.name,
        )
        return PartView("data", label, sent=False, data_blocks=1)
    return PartView("other")


def _result_view(block: ToolResultBlock) -> PartView:
    if isinstance(block.output, str):
        output: tuple[Any, ...] = (block.output,)
    else:
        output = tuple(b.text if isinstance(b, TextBlock) else b for b in block.output)
    texts = [p for p in output if isinstance(p, str)]
    entry = block.metadata.get(METADATA_KEY)
    return PartView(
        "tool_result",
        block.name + " " + "\n".join(texts),
        data_blocks=len(output) - len(texts),
        call_id=block.id,
        tool_name=block.name,
        unfinished=block.state == ToolResultState.RUNNING,
        is_error=block.state in (ToolResultState.ERROR, ToolResultState.DENIED),
        output=output,
        meta=dict(entry) if isinstance(entry, dict) else {},
    )


def message_view(msg: Msg, thinking: ThinkingPolicy, first_part: int = 0) -> MessageView:
    """``msg`` as the engine sees it, from its part ``first_part`` on."""
    role: Role = msg.role if msg.role in ("user", "assistant", "system") else "assistant"
    return MessageView(
        msg_id=msg.id,
        role=role,
        name=msg.name,
        timestamp=msg.created_at,
        parts=[part_view(b, thinking) for b in msg.content[first_part:]],
        pinned=is_pinned(msg),
    )


def set_result_output(block: ToolResultBlock, output: Sequence[Any]) -> None:
    """Write neutral output parts back: ``str`` -> ``TextBlock``, data parts unchanged."""
    if isinstance(block.output, str) and len(output) == 1 and isinstance(output[0], str):
        block.output = output[0]
        return
    block.output = [TextBlock(text=p) if isinstance(p, str) else p for p in output]


def with_blocks(msg: Msg, block_indices: Sequence[int], *, usage: bool) -> Msg:
    """A copy of ``msg`` holding only the given blocks (same id; usage on the kept side)."""
    blocks = [msg.content[i] for i in block_indices]
    update: dict[str, Any] = {"content": blocks, "metadata": dict(msg.metadata)}
    if not usage:
        update["usage"] = None
    return msg.model_copy(update=update)


def archive_id(msg: Msg) -> str:
    """``msg``'s archive id (``core.host.archive_id``) over its blocks' ``type:id`` keys."""
    return core_archive_id(msg.id, [f"{b.type}:{b.id}" for b in msg.content])


class MsgList:
    """The session surface the ledger needs, over a plain list of messages."""

    def __init__(self, messages: Sequence[Msg], thinking: ThinkingPolicy = True) -> None:
        self.messages = messages
        self.thinking = thinking

    def fingerprint(self, start: int = 0) -> list[tuple[str, int]]:
        return [(m.id, len(m.content)) for m in self.messages[start:]]

    def context_key(self) -> None:
        return None  # a list handed over once: nothing to reuse

    def view(self, index: int, first_part: int = 0) -> MessageView:
        return message_view(self.messages[index], self.thinking, first_part)


@dataclass(frozen=True)
class ContextCheck:
    """What :meth:`AsMsgHandler.context_check` decided."""

    plan: SplitPlan
    to_compact: list[Msg]
    to_keep: list[Msg]


class AsMsgHandler:
    """Plans a pair-safe split of an AgentScope 2.x context (the design card's name).

    The hook does the same through the engine; this is the standalone form.
    """

    def __init__(self, counter: TokenCounter, *, count_thinking: ThinkingPolicy = True) -> None:
        self.meter = TokenMeter(counter)
        self.count_thinking = count_thinking

    def context_check(
        self,
        context: Sequence[Msg],
        *,
        threshold_tokens: int,
        reserve_tokens: int,
        fixed_tokens: int = 0,
        force: bool = False,
    ) -> ContextCheck:
        """Decide what to compact and what to keep (see :func:`plan_split` for the rules)."""
        plan, splits = plan_context(
            MsgList(context, self.count_thinking),
            self.meter,
            threshold_tokens=threshold_tokens,
            reserve_tokens=reserve_tokens,
            fixed_tokens=fixed_tokens,
            force=force,
        )
        to_compact: list[Msg] = []
        to_keep: list[Msg] = []
        for msg, split in zip(context, splits, strict=True):
            if split.compact and not split.keep:
                to_compact.append(msg)
            elif split.keep and not split.compact:
                to_keep.append(msg)
            elif split.compact and split.keep:
                to_compact.append(with_blocks(msg, split.compact, usage=False))
                to_keep.append(with_blocks(msg, split.keep, usage=True))
        return ContextCheck(plan, to_compact, to_keep)
