"""What the compactor and the memory summariser read: the compacted messages as neutral
transcript messages, with the end of each offloaded tool output."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from copaw_context.core.context.ledger_entries import MessageEntry
from copaw_context.core.context.step_context import StepContext
from copaw_context.core.host.protocol import HostSession, MessageView, PartView
from copaw_context.core.tokens.meter import (
    BLOCK_OVERHEAD_TOKENS,
    DATA_BLOCK_TOKENS,
    MESSAGE_OVERHEAD_TOKENS,
)
from copaw_context.core.toolresults.truncation import parse_truncation_notice
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart

__all__ = ["compacted_transcript", "result_text", "transcript_of"]

_TAIL_BYTES = 3000


def transcript_of(view: MessageView, parts: Sequence[int] | None = None) -> TranscriptMessage:
    """One message (or only ``parts`` of it) as the compactor and summariser see it."""
    chosen = view.parts if parts is None else [view.parts[i] for i in parts]
    out = [t for t in map(transcript_of_part, chosen) if t is not None]
    return TranscriptMessage(view.role, view.name, tuple(out), view.timestamp)


def transcript_of_part(part: PartView) -> TranscriptPart | None:
    """One part as the compactor sees it (None: a part it does not read)."""
    if part.kind in ("text", "thinking", "hint"):
        return TranscriptPart(part.kind, part.text)
    if part.kind == "tool_call":
        return TranscriptPart("tool_call", part.tool_input or "", part.tool_name, part.call_id)
    if part.kind == "tool_result":
        texts = "\n".join(p for p in part.output if isinstance(p, str))
        return TranscriptPart("tool_result", texts, part.tool_name, part.call_id, part.is_error)
    if part.kind == "data":
        return TranscriptPart("data", part.text)
    return None


async def compacted_transcript(
    ctx: StepContext, host: HostSession, groups: Sequence[tuple[int, Sequence[int] | None]]
) -> list[TranscriptMessage]:
    """What the compactor reads: the compacted messages, with the END of each offloaded
    tool output added (the excerpt in the context is its head; build logs and test runs
    print their errors last, and those exact lines belong in the summary)."""
    include_thinking = ctx.settings.compact_with_thinking_block
    ledger = ctx.ledger(host)
    transcript: list[TranscriptMessage] = []
    for index, parts in groups:
        view = host.view(index)
        message = transcript_of(view, parts)
        if index < len(ledger.messages):
            message = _with_counts(message, view, ledger.messages[index], parts)
        if not include_thinking:
            message = replace(
                message, parts=tuple(p for p in message.parts if p.kind != "thinking")
            )
        transcript.append(message)
    return await _with_saved_tails(ctx, transcript)


def _with_counts(
    message: TranscriptMessage,
    view: MessageView,
    entry: MessageEntry,
    parts: Sequence[int] | None,
) -> TranscriptMessage:
    """``message`` (:func:`transcript_of` ``view``, one part per chosen block) with each
    part's tokens as the ledger counted its block (its text under the compaction's counter,
    the overheads taken off), so the compactor counts no text twice. A block not sent, a
    data block or one the ledger holds otherwise stays unknown (counted when needed)."""
    if len(entry.parts) != len(view.parts):
        return message
    chosen = range(len(view.parts)) if parts is None else parts
    out: list[TranscriptPart] = []
    for i, part in zip(chosen, message.parts, strict=True):
        block, known = view.parts[i], entry.parts[i]
        if block.kind == "data" or known.kind != block.kind or not block.sent:
            out.append(part)
            continue
        overhead = BLOCK_OVERHEAD_TOKENS + DATA_BLOCK_TOKENS * known.data
        overhead += MESSAGE_OVERHEAD_TOKENS if known.kind == "tool_result" else 0
        out.append(replace(part, tokens=max(0, known.tokens - overhead)))
    return replace(message, parts=tuple(out))


def _saved_file(ctx: StepContext, text: str) -> tuple[str, str] | None:
    """The file a result's notice names: (as shown, as a path to read), if any."""
    parsed = parse_truncation_notice(text)
    if parsed is None or not parsed[1].file_path:
        return None
    saved = Path(parsed[1].file_path)
    saved = saved if saved.is_absolute() else ctx.workspace / saved
    return parsed[1].file_path, str(saved)


def _with_tail(text: str, shown: str, tail: str | None) -> str:
    """A result's text with the tail of its saved output (unless it shows nothing new)."""
    if not tail or not tail.strip() or tail in text:
        return text
    return f"{text}\n[last lines of the saved output {shown}]\n{tail}"


def result_text(ctx: StepContext, part: PartView) -> str | None:
    """The text the compactor reads of one tool result, with its saved output's tail as
    :func:`compacted_transcript` adds it; None when that tail is not in memory (a file to
    read: only a compaction reads files)."""
    made = transcript_of_part(part)
    if made is None:
        return None
    text = made.text
    saved = _saved_file(ctx, text)
    if saved is None:
        return text
    tail = ctx.store.known_tail(saved[1], _TAIL_BYTES)
    return None if tail is None else _with_tail(text, saved[0], tail)


async def _with_saved_tails(
    ctx: StepContext, transcript: list[TranscriptMessage]
) -> list[TranscriptMessage]:
    """Each offloaded output's tail appended to its notice (all read in one thread hop)."""
    wanted: list[tuple[int, int, str, str]] = []  # message, part, shown path, file
    for mi, message in enumerate(transcript):
        for pi, part in enumerate(message.parts):
            saved = _saved_file(ctx, part.text) if part.kind == "tool_result" else None
            if saved is not None:
                wanted.append((mi, pi, *saved))
    tails = await ctx.store.read_tails([file for *_, file in wanted], _TAIL_BYTES)
    for (mi, pi, shown, _file), tail in zip(wanted, tails, strict=True):
        message = transcript[mi]
        part = message.parts[pi]
        text = _with_tail(part.text, shown, tail)
        if text is part.text:
            continue
        tokens = None
        if part.tokens is not None:  # the tail at the excerpt's characters per token
            added = len(text) - len(part.text)
            tokens = part.tokens + -(-added * max(1, part.tokens) // max(1, len(part.text)))
        parts = list(message.parts)
        parts[pi] = replace(part, text=text, tokens=tokens)
        transcript[mi] = replace(message, parts=tuple(parts))
    return transcript
