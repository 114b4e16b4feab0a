"""Splitting a long transcript into compactor stages that each fit the compactor's window."""

from __future__ import annotations

from collections.abc import Sequence

from copaw_context.core.summary.prompts import render_transcript
from copaw_context.core.tokens import TokenCounter
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart

__all__ = ["chunk_messages", "shorten_message"]


def chunk_messages(
    messages: Sequence[TranscriptMessage],
    budget: int,
    counter: TokenCounter,
    *,
    include_thinking: bool = True,
) -> list[list[TranscriptMessage]]:
    """Group whole messages into stages that each fit ``budget`` tokens (a message larger
    than a stage is shortened, see :func:`shorten_message`)."""
    budget = max(256, budget)
    chunks: list[list[TranscriptMessage]] = [[]]
    used = 0
    for msg in messages:
        text = render_transcript([msg], include_thinking=include_thinking)
        tokens = counter.count(text)
        if tokens > budget:
            msg = shorten_message(msg, budget, counter)
            tokens = budget
        if used + tokens > budget and chunks[-1]:
            chunks.append([])
            used = 0
        chunks[-1].append(msg)
        used += tokens
    return [c for c in chunks if c] or [[]]


def shorten_message(
    msg: TranscriptMessage, budget: int, counter: TokenCounter
) -> TranscriptMessage:
    """Cut the longest parts of one message so it fits a compactor stage of ``budget`` tokens.

    Only the compactor's view is cut: the message itself is archived whole. The head and the
    tail of each long part are kept, since errors are often printed last. Each part's share
    is measured in tokens with its own characters-per-token ratio (CJK text has about one
    character a token, English four), and checked again after the cut.
    """
    counts = [max(1, counter.count(p.text)) for p in msg.parts]
    total = sum(counts) or 1
    parts: list[TranscriptPart] = []
    for part, tokens in zip(msg.parts, counts, strict=True):
        share = max(32, budget * tokens // total)
        text = part.text
        for _attempt in range(4):
            if counter.count(text) <= share:
                break
            ratio = len(text) / max(1, counter.count(text))
            half = max(8, int(share * ratio * 0.45))
            omitted = len(part.text) - 2 * half
            if omitted <= 0:
                break
            text = (
                f"{part.text[:half]}\n[... {omitted} characters omitted ...]\n{part.text[-half:]}"
            )
            share = max(16, share - 16)  # the omission line costs a few tokens too
        parts.append(
            TranscriptPart(part.kind, text, part.tool_name, part.tool_call_id, part.is_error)
        )
    return TranscriptMessage(msg.role, msg.name, tuple(parts), msg.timestamp)
