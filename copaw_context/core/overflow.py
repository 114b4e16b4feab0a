"""Recognise a provider's "the input is too long" error, whatever client raised it.

Used for reactive recovery: when a model call fails because the input exceeds the window
(our count was wrong, or the provider counts differently), the context is compacted harder
and the call is retried once.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

__all__ = ["is_context_overflow", "overflow_figures", "started_stream"]

# Lower-cased fragments of the messages providers and OpenAI-compatible servers send.
_OVERFLOW_TEXT = re.compile(
    "|".join(
        [
            r"context_length_exceeded",  # OpenAI error code
            r"maximum context length",  # OpenAI, vLLM, many compatible servers
            r"prompt is too long",  # Anthropic
            r"range of input length should be",  # DashScope
            r"input (?:length (?:should|exceeds?|is too)|is too long|tokens? exceeds?)",
            r"exceeds? the (?:model'?s? )?(?:maximum )?context (?:window|length|size)",
            r"context window (?:is )?exceeded",
            r"too many tokens in (?:the )?(?:prompt|input|request)",  # llama.cpp, Ollama
            r"exceeds the available context size",  # llama.cpp server
            r"requested \d+ tokens.*context",  # vLLM
            r"prompt (?:tokens )?(?:exceeds?|is longer than) (?:the )?(?:max|context)",
            r"request too large for model",  # a 413 body
        ]
    )
)
# Limits on rate or quota mention tokens too, but compacting does not help them.
_NOT_OVERFLOW = re.compile(
    r"rate limit|per minute|per day|tokens per|\btpm\b|quota|too many requests"
)
# "resulted in 130512 tokens", "prompt is too long: 207605 tokens > 200000 maximum",
# "requested 9000 tokens", "maximum context length is 8192 tokens", "[1, 30720]".
_SENT = re.compile(
    r"(?:resulted in|too long:|you requested|requested|prompt has|input has|got) ?(\d[\d,]*) tokens"
)
_LIMIT = re.compile(
    r"(?:maximum context length is|> ?|maximum(?: is)?|limit(?: is)?|context size(?: is)?|"
    r"range of input length should be \[1, ?)\s*(\d[\d,]*)"
)
_STATUS_ATTRIBUTES = ("status_code", "status", "http_status")
_CODE_ATTRIBUTES = ("code", "type")


def _errors(exc: BaseException) -> list[BaseException]:
    """``exc`` and the exceptions it was raised from, at most 8 deep."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and len(chain) < 8 and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def is_context_overflow(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) says the model input exceeds the context window.

    Looks at HTTP status 413, an error code ``context_length_exceeded`` and the message text
    of OpenAI, Anthropic, DashScope, Gemini and OpenAI-compatible local servers.
    """
    for error in _errors(exc):
        for name in _STATUS_ATTRIBUTES:
            if getattr(error, name, None) == 413:
                return True
        for name in _CODE_ATTRIBUTES:
            value = getattr(error, name, None)
            if isinstance(value, str) and value.lower() == "context_length_exceeded":
                return True
        text = _text_of(error).lower()
        if _OVERFLOW_TEXT.search(text) and not _NOT_OVERFLOW.search(text):
            return True
    return False


def _text_of(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}"
    body = getattr(error, "body", None) or getattr(error, "message", None)
    return text if body is None else f"{text} {body}"


def overflow_figures(exc: BaseException) -> tuple[int | None, int | None]:
    """(tokens the provider counted, its limit) as an overflow error states them, if it does."""
    sent: int | None = None
    limit: int | None = None
    for error in _errors(exc):
        text = _text_of(error).lower()
        if sent is None and (match := _SENT.search(text)):
            sent = int(match.group(1).replace(",", ""))
        if limit is None and (match := _LIMIT.search(text)):
            limit = int(match.group(1).replace(",", ""))
    if sent is not None and limit is not None and sent <= limit:
        sent = None  # e.g. the completion's share was counted in: not the prompt's size
    return sent, limit


async def started_stream(response: Any) -> Any:
    """``response``, or for a streamed one the same stream with its first chunk already
    received: an error a provider raises at the start of a stream surfaces here, where the
    call can still be recovered from and retried."""
    if not isinstance(response, AsyncIterator):  # a type check: some responses are dicts
        return response
    try:
        first = await response.__anext__()
    except StopAsyncIteration:
        first = None

    async def replay() -> AsyncIterator[Any]:
        if first is not None:
            yield first
        async for chunk in response:
            yield chunk

    return replay()
