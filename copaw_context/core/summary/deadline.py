"""How long a compactor call may take: a timeout on progress, not on the whole call.

A local model on a CPU may need minutes to read a long request and minutes more to write
the summary, yet it is working all along. So the configured timeout covers a call of up to
:data:`REFERENCE_TOKENS` tokens and grows in proportion beyond that; and for a model that
reports progress (streamed text) it is the longest wait *between two signs of progress*:
only the wait for the first one grows with the request (the model reads it first). A model
that reports no progress gets one deadline for the whole call, grown by the request and by
the reply it is asked to write (writing a token costs about :data:`DECODE_WEIGHT` times as
long as reading one). A model that stops making progress is cut off after the timeout
whatever its size; one that streams far past the summary limit is stopped as a runaway.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

__all__ = [
    "DECODE_WEIGHT",
    "REFERENCE_TOKENS",
    "CallTimeout",
    "ProgressCallback",
    "ReplyRunaway",
    "call_timeout",
    "watch_call",
]

# The call size the configured timeout is meant for. A 1.5B model on two busy CPU cores read
# 26 tokens a second: 1,000 tokens per 120 s leaves room for models four times slower.
REFERENCE_TOKENS = 1000
DECODE_WEIGHT = 4  # writing a token takes about this many times as long as reading one
_CANCEL_GRACE_SECONDS = 1.0  # how long a cancelled call may take to stop before we go on

ProgressCallback = Callable[[int], None]
"""Called by a model while it answers, with the number of characters received so far."""


class ReplyRunaway(Exception):
    """A streamed reply went far past the summary limit and was stopped."""

    def __init__(self, chars: int, limit: int) -> None:
        super().__init__(f"the reply passed {chars} characters while streaming; limit {limit}")
        self.chars = chars
        self.limit = limit


@dataclass(frozen=True)
class CallTimeout:
    """The deadlines of one compactor call, in seconds."""

    idle: float  # the configured timeout: the longest wait between two progress events
    first: float  # the wait for the first progress event: idle + reading the request
    total: float  # a model that reports no progress: first + writing the reply
    max_reply_chars: int | None = None  # a streamed reply past this is a runaway


def call_timeout(
    timeout_seconds: float,
    request_tokens: int,
    reply_tokens: int,
    *,
    reference_tokens: int = REFERENCE_TOKENS,
    max_reply_chars: int | None = None,
) -> CallTimeout:
    """The deadlines of a call that sends ``request_tokens`` and asks for up to
    ``reply_tokens``: ``timeout_seconds`` for a call of up to ``reference_tokens``, in
    proportion beyond; the wait between two progress events is always ``timeout_seconds``."""
    if reference_tokens <= 0:
        raise ValueError(f"reference_tokens: got {reference_tokens!r}; use an int > 0")
    reading = max(0, request_tokens)
    writing = DECODE_WEIGHT * max(0, reply_tokens)
    first = timeout_seconds * max(1.0, reading / reference_tokens)
    total = timeout_seconds * max(1.0, (reading + writing) / reference_tokens)
    return CallTimeout(timeout_seconds, first, total, max_reply_chars)


class _Progress:
    def __init__(self, start: float) -> None:
        self.start = start
        self.last: float | None = None
        self.chars = 0
        self.runaway = False

    def why(self, limits: CallTimeout, streams: bool) -> str:
        if not streams:
            return f"compactor timed out after {limits.total:g} s"
        if self.last is None:
            return f"compactor timed out after {limits.first:g} s without any progress"
        return f"compactor made no progress for {limits.idle:g} s ({self.chars} characters in)"

    def deadline(self, limits: CallTimeout, streams: bool) -> float:
        if not streams:
            return self.start + limits.total
        if self.last is None:
            return self.start + limits.first
        return self.last + limits.idle


async def _stop(task: asyncio.Future[str]) -> None:
    task.cancel()
    await asyncio.wait({task}, timeout=_CANCEL_GRACE_SECONDS)


async def watch_call(
    start: Callable[[ProgressCallback | None], Awaitable[str]],
    limits: CallTimeout,
    *,
    streams: bool,
    clock: Callable[[], float] = time.monotonic,
) -> str:
    """Run ``start(on_progress)`` (``on_progress`` is None unless the model ``streams``)
    under ``limits``; its reply, or TimeoutError when a deadline passes, or
    :class:`ReplyRunaway` when the streamed reply passes ``limits.max_reply_chars``.

    The call runs as its own task; cancelling the caller cancels it too.
    """
    state = _Progress(clock())
    task: asyncio.Future[str]

    def on_progress(chars: int) -> None:
        state.last = clock()
        state.chars = max(state.chars, int(chars))
        limit = limits.max_reply_chars
        if limit is not None and state.chars > limit and not task.done():
            state.runaway = True
            task.cancel()

    task = asyncio.ensure_future(start(on_progress if streams else None))
    try:
        while True:
            remaining = state.deadline(limits, streams) - clock()
            if remaining <= 0:
                await _stop(task)
                raise TimeoutError(state.why(limits, streams))
            done, _ = await asyncio.wait({task}, timeout=remaining)
            if done:
                if state.runaway:
                    raise ReplyRunaway(state.chars, limits.max_reply_chars or 0)
                return task.result()
    finally:
        if not task.done():
            await _stop(task)
