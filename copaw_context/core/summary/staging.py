"""Splitting a long transcript into compactor stages that each fill the compactor's window.

A stage is packed up to its room (the window minus the prompt, the summary carried in and
the reply reserve, see :func:`stage_room`): whole messages first, then the head of the next
message when a good share of the room is left (its tail opens the next stage), so a small
compactor gets about ``input / room`` calls, not one a message. A message larger than a
whole stage is cut (:func:`shorten_message`); the archive keeps every message whole.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import replace

from copaw_context.core.summary.prompts import known_cost, render_transcript
from copaw_context.core.tokens import TokenCounter
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart

__all__ = [
    "MIN_STAGE_TOKENS",
    "StagePacker",
    "chunk_messages",
    "shorten_message",
    "stage_room",
]

MIN_STAGE_TOKENS = 256  # a stage never has less room than this, however tight the window
_MARGIN_SHARE = 20  # 5% of the window against tokenizer differences, plus a fixed margin
_MARGIN_TOKENS = 64
_CONTINUED = "[…]"  # marks both sides of a message split across two stages
_MIN_SPLIT_SHARE = 8  # a message is split only when at least 1/8 of the room is left


def stage_room(window: int, *, fixed_tokens: int, carried_tokens: int, reply_chars: int) -> int:
    """Tokens of transcript one stage may hold: ``window`` minus the request's fixed parts
    (system prompt, instructions), the summary carried in, the reply reserve (``reply_chars``
    at 2 characters a token: the budget's ``ask``) and a safety margin; at least
    :data:`MIN_STAGE_TOKENS`."""
    margin = _MARGIN_TOKENS + window // _MARGIN_SHARE
    room = window - fixed_tokens - carried_tokens - reply_chars // 2 - margin
    return max(MIN_STAGE_TOKENS, room)


class StagePacker:
    """Hands out the stages of ``messages`` one at a time, each packed up to a given room
    (the room of a stage depends on the summary the previous stage returned)."""

    def __init__(
        self,
        messages: Sequence[TranscriptMessage],
        counter: TokenCounter,
        *,
        include_thinking: bool = True,
    ) -> None:
        self._pending: deque[TranscriptMessage] = deque(messages)
        self._counter = counter
        self._thinking = include_thinking
        self._handed = 0
        self.last_tokens = 0
        """Tokens of the last stage handed out, as packed (at most its room)."""

    def known_tokens(self) -> int | None:
        """Tokens of the messages not handed out yet, when every part's count is known
        (``None``: some are not, and counting them here would count them twice)."""
        total = 0
        for message in self._pending:
            cost = known_cost(message, include_thinking=self._thinking)
            if cost is None:
                return None
            total += cost + 1
        return total

    def _cost(self, message: TranscriptMessage) -> int:
        known = known_cost(message, include_thinking=self._thinking)
        if known is not None:
            return known
        return self._counter.count(render_transcript([message], include_thinking=self._thinking))

    def next_stage(self, room: int) -> list[TranscriptMessage] | None:
        """The messages of the next stage, within ``room`` tokens; None when all are handed
        out (the first call returns a stage, empty for no messages)."""
        if not self._pending and self._handed:
            return None
        self._handed += 1
        room = max(MIN_STAGE_TOKENS, room)
        stage: list[TranscriptMessage] = []
        used = 0
        self.last_tokens = 0
        while self._pending:
            message = self._pending[0]
            cost = self._cost(message)
            if cost > room:  # larger than a whole stage: its compactor view is cut
                message = shorten_message(message, room, self._counter)
                cost = min(room, self._cost(message))
            if used + cost <= room:
                stage.append(message)
                self._pending.popleft()
                used += cost + 1  # the blank line between two messages
                self.last_tokens = used
                continue
            left = room - used
            if left * _MIN_SPLIT_SHARE >= room:
                pieces = self._split(message, left)
                if pieces is not None:
                    stage.append(pieces[0])
                    self._pending[0] = pieces[1]
                    self.last_tokens = room  # at most
            break
        return stage

    def _split(
        self, message: TranscriptMessage, room: int
    ) -> tuple[TranscriptMessage, TranscriptMessage] | None:
        """The message as a head within ``room`` tokens and the rest: cut at a line or word
        end inside its first part that does not fit (else between two parts); None when no
        useful head fits."""
        parts = message.parts
        low, high = 0, len(parts)  # the most whole parts that fit, by bisection
        while low < high:
            middle = (low + high + 1) // 2
            if self._cost(replace(message, parts=parts[:middle])) <= room:
                low = middle
            else:
                high = middle - 1
        if low == len(parts):
            return None  # the whole message fits after all
        k, part, before = low, parts[low], parts[:low]
        left = room - self._cost(replace(message, parts=before))
        cut = self._cut_point(part.text, left, part.tokens)
        for _attempt in range(6):  # counted again: the label and the joins cost too
            if cut <= 0:
                break
            first = replace(part, text=f"{part.text[:cut].rstrip()} {_CONTINUED}", tokens=None)
            head = replace(message, parts=(*before, first))
            if self._cost(head) <= room:
                second = replace(part, text=f"{_CONTINUED} {part.text[cut:].lstrip()}", tokens=None)
                return head, replace(message, parts=(second, *parts[k + 1 :]))
            cut = _snap(part.text, cut * 9 // 10)
        if before:
            return replace(message, parts=before), replace(message, parts=parts[k:])
        return None

    def _cut_point(self, text: str, tokens: int, known: int | None = None) -> int:
        """Where to cut ``text`` (of ``known`` tokens, when known) so its head holds about
        ``tokens`` tokens (a line or word end)."""
        tokens -= 24  # the part's label, the continuation mark, the joins
        if tokens <= 16 or not text:
            return 0
        ratio = len(text) / max(1, self._counter.count(text) if known is None else known)
        cut = min(len(text) - 1, int(tokens * ratio))
        for _attempt in range(4):
            cut = _snap(text, cut)
            if cut <= 0 or self._counter.count(text[:cut]) <= tokens:
                break
            cut = cut * 9 // 10
        return max(0, cut)


def _snap(text: str, cut: int) -> int:
    """``cut`` moved back to the end of a line, else of a word, within its last fifth."""
    floor = cut - cut // 5
    for mark in ("\n", " "):
        at = text.rfind(mark, floor, cut)
        if at > 0:
            return at
    return cut


def chunk_messages(
    messages: Sequence[TranscriptMessage],
    budget: int,
    counter: TokenCounter,
    *,
    include_thinking: bool = True,
) -> list[list[TranscriptMessage]]:
    """All the stages of ``messages`` at once, each packed up to ``budget`` tokens (see
    :class:`StagePacker`; a message larger than a stage is shortened)."""
    packer = StagePacker(messages, counter, include_thinking=include_thinking)
    stages: list[list[TranscriptMessage]] = []
    while (stage := packer.next_stage(budget)) is not None:
        stages.append(stage)
    return stages


def shorten_message(
    msg: TranscriptMessage, budget: int, counter: TokenCounter
) -> TranscriptMessage:
    """Cut the longest parts of one message so it fits a compactor stage of ``budget`` tokens.

    Only the compactor's view is cut: the message itself is archived whole. The head and the
    tail of each long part are kept, since errors are often printed last. Each part's share
    is measured in tokens with its own characters-per-token ratio (CJK text has about one
    character a token, English four), and checked again after the cut.
    """
    counts = [max(1, counter.count(p.text) if p.tokens is None else p.tokens) for p in msg.parts]
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
