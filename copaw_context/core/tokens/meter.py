"""Tokens and estimate bytes of texts and message parts, with one counter."""

from __future__ import annotations

from copaw_context.core.host.protocol import PartView
from copaw_context.core.tokens import TokenCounter

__all__ = ["BLOCK_OVERHEAD_TOKENS", "DATA_BLOCK_TOKENS", "MESSAGE_OVERHEAD_TOKENS", "TokenMeter"]

MESSAGE_OVERHEAD_TOKENS = 4
BLOCK_OVERHEAD_TOKENS = 3
DATA_BLOCK_TOKENS = 2000  # AgentScope's own flat estimate for an image/audio/PDF block


class TokenMeter:
    """Tokens and estimate bytes of texts and parts, with one counter.

    Estimate bytes are the UTF-8 size plus ``DATA_BLOCK_TOKENS * 4`` per data block, so that
    bytes / 4 is AgentScope's own estimate and bytes / 5 a floor no tokenizer goes under.
    """

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._texts: dict[str, tuple[int, int]] = {}

    def text(self, text: str) -> tuple[int, int]:
        """(tokens, bytes) of a plain string."""
        if not text:
            return 0, 0
        size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
        return self.counter.count(text), size

    def fixed(self, text: str) -> tuple[int, int]:
        """:meth:`text` for the few texts sent at every call (cached: they rarely change)."""
        cached = self._texts.get(text)
        if cached is None:
            if len(self._texts) > 16:
                self._texts.clear()
            cached = self._texts[text] = self.text(text)
        return cached

    def part(self, part: PartView) -> tuple[int, int]:
        """(tokens, bytes) the model receives for one part, block overhead included; a tool
        result also costs a message's overhead (OpenAI-style APIs send each as a message)."""
        tokens, size = self.text(part.text if part.sent else "")
        data = part.data_blocks
        overhead = BLOCK_OVERHEAD_TOKENS + (
            MESSAGE_OVERHEAD_TOKENS if part.kind == "tool_result" else 0
        )
        return (
            tokens + overhead + data * DATA_BLOCK_TOKENS,
            size + data * DATA_BLOCK_TOKENS * 4,
        )
