"""A framework-neutral view of conversation messages.

Adapters translate their host's messages into :class:`TranscriptMessage` so that the
compactor prompts, the extractive summariser and the archive guide never see AgentScope
types.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = ["PartKind", "TranscriptMessage", "TranscriptPart"]

PartKind = Literal["text", "thinking", "tool_call", "tool_result", "data", "hint"]


@dataclass(frozen=True, slots=True)
class TranscriptPart:
    """One content block of a message.

    ``text`` holds the text, the thinking, the tool input (raw JSON) or the tool output;
    ``tool_name`` is set for tool calls and results; ``is_error`` marks failed tool results.
    ``tokens``: the tokens of ``text`` under the compaction's counter when the engine already
    knows them (its ledger counted the block), so the compactor does not count it again;
    ``None``: not known. A part made with another text must not keep it.
    """

    kind: PartKind
    text: str = ""
    tool_name: str | None = None
    tool_call_id: str | None = None
    is_error: bool = False
    tokens: int | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class TranscriptMessage:
    """One message: who said it, when (ISO 8601 text), and its parts in order."""

    role: Literal["user", "assistant", "system"]
    name: str
    parts: tuple[TranscriptPart, ...] = field(default_factory=tuple)
    timestamp: str = ""

    def text(self) -> str:
        """The message's plain text parts joined by newlines."""
        return "\n".join(p.text for p in self.parts if p.kind == "text")
