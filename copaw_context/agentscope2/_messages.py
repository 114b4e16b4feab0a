"""AsMsgHandler: AgentScope 2.x context <-> the framework-neutral split planner.

In AgentScope 2.x one assistant reply is one ``Msg`` holding text, tool_call and
tool_result blocks in order, so the handler works on blocks: every block of an
assistant message is one :class:`SplitItem`, every user or system message is one item.
A plan from :func:`plan_split` is mapped back onto messages; a message the plan cuts
through becomes two valid messages (the compacted head and the kept tail, which keeps
the original id so the running reply keeps appending to it).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agentscope.message import (
    DataBlock,
    HintBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolResultState,
)

from copaw_context.core.split import SplitItem, SplitPlan, plan_split
from copaw_context.core.tokens import TokenCounter
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart

__all__ = [
    "METADATA_KEY",
    "AsMsgHandler",
    "ContextCheck",
    "ThinkingPolicy",
    "hint_text",
    "is_pinned",
    "pin_message",
    "tool_result_texts",
]

METADATA_KEY = "copaw_context"
"""Key of this package's entry in ``Msg.metadata`` and ``ToolResultBlock.metadata``."""

MESSAGE_OVERHEAD_TOKENS = 4
BLOCK_OVERHEAD_TOKENS = 3
DATA_BLOCK_TOKENS = 2000  # AgentScope's own flat estimate for an image/audio/PDF block


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
    return _block_text(hint, False)[0].strip()


def _block_text(block: Any, include_thinking: bool) -> tuple[str, int]:
    """The text the model receives for ``block`` and the count of data blocks in it."""
    if isinstance(block, TextBlock):
        return block.text, 0
    if isinstance(block, ThinkingBlock):
        return (block.thinking if include_thinking else ""), 0
    if isinstance(block, HintBlock):
        if isinstance(block.hint, str):
            return block.hint, 0
        texts = [b.text for b in block.hint if isinstance(b, TextBlock)]
        return "\n".join(texts), len(block.hint) - len(texts)
    if isinstance(block, ToolCallBlock):
        return f"{block.name} {block.input}", 0
    if isinstance(block, ToolResultBlock):
        texts = tool_result_texts(block)
        data = 0 if isinstance(block.output, str) else len(block.output) - len(texts)
        return block.name + " " + "\n".join(texts), data
    if isinstance(block, DataBlock):
        return "", 1
    return "", 0


ThinkingPolicy = bool | Callable[[ThinkingBlock], bool]
"""Whether the model's formatter sends a thinking block back: for all, or decided per block."""


@dataclass(frozen=True)
class ContextCheck:
    """What :meth:`AsMsgHandler.context_check` decided, with token figures."""

    plan: SplitPlan
    to_compact: list[Msg]
    to_keep: list[Msg]
    fixed_tokens: int
    message_tokens: int
    threshold_tokens: int
    reserve_tokens: int
    latest_request_index: int | None
    """Index in ``to_keep`` of the latest user request, when it must be truncated."""

    @property
    def total_tokens(self) -> int:
        """Everything the model would receive: fixed parts plus the messages."""
        return self.fixed_tokens + self.message_tokens


class AsMsgHandler:
    """Maps an AgentScope 2.x context onto split items and back.

    Per-block token counts are cached (keyed by block id and text identity), so a step
    costs about the new content, not the whole context. Each cache entry also holds the
    block's UTF-8 size, from which the plain byte estimates (bounds for usage calibration)
    are derived without touching the text again.
    """

    def __init__(self, counter: TokenCounter, *, count_thinking: ThinkingPolicy = True) -> None:
        self.counter = counter
        self.count_thinking = count_thinking
        self._cache: dict[tuple[str, str, int, int], tuple[int, int]] = {}
        self._tools_count: tuple[str, int, int] | None = None

    def count_text(self, text: str) -> int:
        """Tokens of a plain string."""
        return self.counter.count(text) if text else 0

    def _thinking_sent(self, block: Any) -> bool:
        policy = self.count_thinking
        return policy if isinstance(policy, bool) else bool(policy(block))

    def measure_block(self, block: Any) -> tuple[int, int]:
        """(tokens, estimate bytes) the model receives for one content block.

        Estimate bytes are the UTF-8 size of the text plus ``DATA_BLOCK_TOKENS * 4`` per data
        block, so that bytes / 4 is AgentScope's own estimate of the block.
        """
        include = self._thinking_sent(block) if isinstance(block, ThinkingBlock) else True
        text, data_blocks = _block_text(block, include)
        key = (getattr(block, "id", ""), getattr(block, "type", ""), len(text), hash(text))
        cached = self._cache.get(key)
        if cached is None:
            size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
            cached = (self.count_text(text) + BLOCK_OVERHEAD_TOKENS, size)
            if len(self._cache) > 50_000:
                self._cache.clear()
            self._cache[key] = cached
        tokens, size = cached
        return tokens + data_blocks * DATA_BLOCK_TOKENS, size + data_blocks * DATA_BLOCK_TOKENS * 4

    def count_block(self, block: Any) -> int:
        """Tokens the model receives for one content block."""
        return self.measure_block(block)[0]

    def measure_message(self, msg: Msg) -> tuple[int, int]:
        """(tokens, estimate bytes) of a whole message."""
        tokens, size = MESSAGE_OVERHEAD_TOKENS, 0
        for block in msg.content:
            block_tokens, block_size = self.measure_block(block)
            tokens += block_tokens
            size += block_size
        return tokens, size

    def count_message(self, msg: Msg) -> int:
        """Tokens of a whole message."""
        return self.measure_message(msg)[0]

    def measure_tools(self, tools: Sequence[dict[str, Any]]) -> tuple[int, int]:
        """(tokens, bytes) of the tool schemas sent with every request (cached)."""
        if not tools:
            return 0, 0
        schema = json.dumps(list(tools), ensure_ascii=False, sort_keys=True)
        if self._tools_count is None or self._tools_count[0] != schema:
            self._tools_count = (schema, self.count_text(schema), len(schema.encode("utf-8")))
        return self._tools_count[1], self._tools_count[2]

    def count_tools(self, tools: Sequence[dict[str, Any]]) -> int:
        """Tokens of the tool schemas sent with every request (cached: they rarely change)."""
        return self.measure_tools(tools)[0]

    # ------------------------------------------------------------------ items
    def items(self, context: Sequence[Msg]) -> tuple[list[SplitItem], list[tuple[int, int]]]:
        """Flatten ``context`` into split items and their (message, block) positions.

        A user or system message is a single item (block index -1).
        """
        answered = _answered_calls(context)
        items: list[SplitItem] = []
        refs: list[tuple[int, int]] = []
        for mi, msg in enumerate(context):
            pinned = is_pinned(msg)
            if msg.role != "assistant":
                items.append(
                    SplitItem(
                        message_index=mi,
                        tokens=self.count_message(msg),
                        is_user_request=msg.role == "user",
                        pinned=pinned,
                    )
                )
                refs.append((mi, -1))
                continue
            for bi, block in enumerate(msg.content):
                tokens = self.count_block(block) + (MESSAGE_OVERHEAD_TOKENS if bi == 0 else 0)
                if isinstance(block, ToolCallBlock):
                    item = SplitItem(
                        message_index=mi,
                        tokens=tokens,
                        call_ids=frozenset({block.id}),
                        pinned=pinned,
                        unfinished=(mi, bi) not in answered,
                    )
                elif isinstance(block, ToolResultBlock):
                    item = SplitItem(
                        message_index=mi,
                        tokens=tokens,
                        result_ids=frozenset({block.id}),
                        pinned=pinned,
                        unfinished=block.state == ToolResultState.RUNNING,
                    )
                else:
                    item = SplitItem(message_index=mi, tokens=tokens, pinned=pinned)
                items.append(item)
                refs.append((mi, bi))
        return items, refs

    # ------------------------------------------------------------------ check
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
        items, refs = self.items(context)
        plan = plan_split(
            items,
            threshold_tokens=threshold_tokens,
            reserve_tokens=reserve_tokens,
            fixed_tokens=fixed_tokens,
            force=force,
        )
        to_compact, to_keep = self.apply_plan(context, refs, plan)
        latest_index: int | None = None
        if plan.request_over_reserve:
            for i in range(len(to_keep) - 1, -1, -1):
                if to_keep[i].role == "user":
                    latest_index = i
                    break
        return ContextCheck(
            plan=plan,
            to_compact=to_compact,
            to_keep=to_keep,
            fixed_tokens=fixed_tokens,
            message_tokens=plan.total_tokens - fixed_tokens,
            threshold_tokens=threshold_tokens,
            reserve_tokens=reserve_tokens,
            latest_request_index=latest_index,
        )

    @staticmethod
    def apply_plan(
        context: Sequence[Msg], refs: Sequence[tuple[int, int]], plan: SplitPlan
    ) -> tuple[list[Msg], list[Msg]]:
        """Turn a plan over items into (messages to compact, messages to keep)."""
        compact_blocks: dict[int, list[int]] = {}
        keep_blocks: dict[int, list[int]] = {}
        for index in plan.compact:
            mi, bi = refs[index]
            compact_blocks.setdefault(mi, []).append(bi)
        for index in plan.keep:
            mi, bi = refs[index]
            keep_blocks.setdefault(mi, []).append(bi)
        to_compact: list[Msg] = []
        to_keep: list[Msg] = []
        for mi, msg in enumerate(context):
            head, tail = compact_blocks.get(mi), keep_blocks.get(mi)
            if head and not tail:
                to_compact.append(msg)
            elif tail and not head:
                to_keep.append(msg)
            elif head and tail:
                to_compact.append(_with_blocks(msg, head, usage=False))
                to_keep.append(_with_blocks(msg, tail, usage=True))
            elif not msg.content:
                to_keep.append(msg)  # an empty carrier message (e.g. usage only)
        return to_compact, to_keep

    # -------------------------------------------------------------- transcript
    @staticmethod
    def to_transcript(
        messages: Sequence[Msg], *, include_thinking: bool = True
    ) -> list[TranscriptMessage]:
        """Framework-neutral copies of ``messages`` for the compactor and summariser."""
        return [to_transcript_message(m, include_thinking) for m in messages]


def _answered_calls(context: Sequence[Msg]) -> set[tuple[int, int]]:
    """Positions of tool calls that have a finished result later on.

    Pairs by occurrence (oldest open call with the id first), so servers that reuse ids
    such as ``call_0`` on every turn are handled.
    """
    open_calls: dict[str, deque[tuple[int, int]]] = {}
    answered: set[tuple[int, int]] = set()
    for mi, msg in enumerate(context):
        for bi, block in enumerate(msg.content):
            if isinstance(block, ToolCallBlock):
                open_calls.setdefault(block.id, deque()).append((mi, bi))
            elif isinstance(block, ToolResultBlock) and block.state != ToolResultState.RUNNING:
                waiting = open_calls.get(block.id)
                if waiting:
                    answered.add(waiting.popleft())
    return answered


def _with_blocks(msg: Msg, block_indices: Sequence[int], *, usage: bool) -> Msg:
    blocks = [msg.content[i] for i in block_indices]
    update: dict[str, Any] = {"content": blocks, "metadata": dict(msg.metadata)}
    if not usage:
        update["usage"] = None
    return msg.model_copy(update=update)


def to_transcript_message(msg: Msg, include_thinking: bool = True) -> TranscriptMessage:
    """One AgentScope message as a :class:`TranscriptMessage`."""
    parts: list[TranscriptPart] = []
    for block in msg.content:
        if isinstance(block, TextBlock):
            parts.append(TranscriptPart("text", block.text))
        elif isinstance(block, ThinkingBlock):
            if include_thinking:
                parts.append(TranscriptPart("thinking", block.thinking))
        elif isinstance(block, HintBlock):
            parts.append(TranscriptPart("hint", _block_text(block, False)[0]))
        elif isinstance(block, ToolCallBlock):
            parts.append(
                TranscriptPart(
                    "tool_call", block.input, tool_name=block.name, tool_call_id=block.id
                )
            )
        elif isinstance(block, ToolResultBlock):
            parts.append(
                TranscriptPart(
                    "tool_result",
                    "\n".join(tool_result_texts(block)),
                    tool_name=block.name,
                    tool_call_id=block.id,
                    is_error=block.state in (ToolResultState.ERROR, ToolResultState.DENIED),
                )
            )
        elif isinstance(block, DataBlock):
            parts.append(TranscriptPart("data", block.name or block.source.media_type))
    role = msg.role if msg.role in ("user", "assistant", "system") else "assistant"
    return TranscriptMessage(role=role, name=msg.name, parts=tuple(parts), timestamp=msg.created_at)
