"""AgentScope 2.x messages <-> the engine's neutral views, and ``AsMsgHandler``.

In AgentScope 2.x one assistant reply is one ``Msg`` holding text, tool_call and tool_result
blocks in order, so a plan may cut through a message: the compacted head and the kept tail
become two valid messages, and the tail keeps the original id so the running reply keeps
appending to it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import attrgetter
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

from copaw_context.core.host.protocol import MessageView, PartView
from copaw_context.core.host.protocol import archive_id as core_archive_id
from copaw_context.core.host.views import (
    METADATA_KEY,
    data_view,
    pin_in,
    pinned_in,
    role_of,
    thinking_sent,
    tool_call_view,
    tool_result_view,
)
from copaw_context.core.planning.context_check import ContextCheck, MessageSplitter
from copaw_context.core.summary.data_label import data_label

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
    "with_blocks",
]

ARCHIVE_FORM = "agentscope2.Msg"
"""How an archived message is serialised: ``Msg.model_dump(mode="json")``."""

_ID, _CONTENT = attrgetter("id"), attrgetter("content")
_LIST_LEN = list.__len__

ThinkingPolicy = bool | Callable[[ThinkingBlock], bool]
"""Whether the model's formatter sends a thinking block back: for all, or decided per block."""


def pin_message(msg: Msg) -> Msg:
    """Mark ``msg`` so that compaction never removes it (returns the same message)."""
    pin_in(msg.metadata)
    return msg


def is_pinned(msg: Msg) -> bool:
    """Whether ``msg`` was pinned with :func:`pin_message`."""
    return pinned_in(msg.metadata)


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
        return PartView("thinking", block.thinking, sent=thinking_sent(thinking, block))
    if isinstance(block, HintBlock):
        data = (
            0
            if isinstance(block.hint, str)
            else sum(1 for b in block.hint if not isinstance(b, TextBlock))
        )
        return PartView("hint", hint_text(block), data_blocks=data)
    if isinstance(block, ToolCallBlock):
        return tool_call_view(block.name, block.input, block.id)
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
        return data_view(label)
    return PartView("other")


def _result_view(block: ToolResultBlock) -> PartView:
    if isinstance(block.output, str):
        output: tuple[Any, ...] = (block.output,)
    else:
        output = tuple(b.text if isinstance(b, TextBlock) else b for b in block.output)
    return tool_result_view(
        block.name,
        output,
        block.id,
        block.metadata.get(METADATA_KEY),
        unfinished=block.state == ToolResultState.RUNNING,
        is_error=block.state in (ToolResultState.ERROR, ToolResultState.DENIED),
    )


def message_view(msg: Msg, thinking: ThinkingPolicy, first_part: int = 0) -> MessageView:
    """``msg`` as the engine sees it, from its part ``first_part`` on."""
    return MessageView(
        msg_id=msg.id,
        role=role_of(msg.role),
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


def _blocks_of(msg: Msg) -> list[Any]:
    """``msg``'s blocks: a ``str`` content (``Msg`` declares a list, but an assignment is not
    validated) is one text block."""
    content: Any = msg.content
    return content if isinstance(content, list) else [TextBlock(text=str(content))]


def with_blocks(msg: Msg, block_indices: Sequence[int], *, usage: bool) -> Msg:
    """A copy of ``msg`` holding only the given blocks (same id; usage on the kept side)."""
    content = _blocks_of(msg)
    blocks = [content[i] for i in block_indices]
    update: dict[str, Any] = {"content": blocks, "metadata": dict(msg.metadata)}
    if not usage:
        update["usage"] = None
    return msg.model_copy(update=update)


def archive_id(msg: Msg) -> str:
    """``msg``'s archive id (``core.host.archive_id``) over its blocks' ``type:id`` keys."""
    return core_archive_id(msg.id, [f"{b.type}:{b.id}" for b in msg.content])


def _part_objects(content: Any) -> Sequence[object] | None:
    """The part objects of a message's content (a ``str`` is its one part)."""
    if isinstance(content, list):
        return content
    return (content,) if isinstance(content, str) else None


class AsMsgHandler(MessageSplitter[Msg]):
    """Plans a pair-safe split of an AgentScope 2.x context (the design card's name).

    The hook does the same through the engine; this is the standalone form
    (``context_check`` is ``core.planning.context_check.MessageSplitter``'s). A message
    whose content was set to a ``str`` is one text block (that ``str`` its part object).
    """

    def fingerprint(self, msg: Msg) -> tuple[str, int]:
        return msg.id, len(msg.content) if isinstance(msg.content, list) else 1

    def fingerprints(self, messages: Sequence[Msg]) -> list[tuple[str, int]]:
        try:  # list.__len__ refuses a str content
            counts = map(_LIST_LEN, map(_CONTENT, messages))
            return list(zip(map(_ID, messages), counts, strict=True))
        except TypeError:  # rare: the slow form
            return [self.fingerprint(m) for m in messages]

    def view(self, msg: Msg, first_part: int = 0) -> MessageView:
        if not isinstance(msg.content, list):
            msg = msg.model_copy(update={"content": _blocks_of(msg)})
        return message_view(msg, self.count_thinking, first_part)

    def blocks(self, msg: Msg) -> Sequence[object] | None:
        return _part_objects(msg.content)

    def block_lists(self, messages: Sequence[Msg]) -> list[Sequence[object] | None]:
        return [c if isinstance(c, list) else _part_objects(c) for c in map(_CONTENT, messages)]

    def with_blocks(self, msg: Msg, blocks: Sequence[int], *, kept: bool) -> Msg:
        return with_blocks(msg, blocks, usage=kept)
