"""Recognise a provider's "the input is too long" error, whatever client raised it.

Used for reactive recovery: when a model call fails because the input exceeds the window
(our count was wrong, or the provider counts differently), the context is compacted harder
and the call is retried once.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

__all__ = [
    "MAX_PLAUSIBLE_TOKENS",
    "MIN_PLAUSIBLE_TOKENS",
    "is_context_overflow",
    "overflow_figures",
    "started_stream",
]

# Lower-cased fragments of the messages providers and OpenAI-compatible servers send
# (tests/reliability/test_provider_wordings.py holds each provider's real text).
_OVERFLOW_TEXT = re.compile(
    "|".join(
        [
            r"context_length_exceeded",  # OpenAI / Azure error code
            r"exceed_context_size_error",  # llama.cpp server error type
            r"maximum context length",  # OpenAI, Azure, vLLM, many compatible servers
            r"prompt is too long",  # Anthropic
            r"exceeds? context limit",  # Anthropic: input length and `max_tokens` exceed ...
            r"input token count \(\d+\) exceeds",  # Gemini
            r"range of input length should be",  # DashScope
            r"decoder prompt \(length \d+\) is longer than",  # vLLM V1
            r"exceeds the maximum allowed length",  # SGLang
            r"when context (?:the )?overflows",  # LM Studio
            r"loaded with (?:a )?context length of only",  # LM Studio
            r"tokens to keep from the initial prompt is greater than the context length",
            r"input length \d+ exceeds context length",  # LM Studio (older)
            r"input exceeds (?:the )?context length",  # Ollama
            r"`inputs` tokens \+ `max_new_tokens` must be",  # TGI
            r"`inputs` must have less than \d+ tokens",  # TGI
            r"input (?:length (?:should|exceeds?|is too)|is too long|tokens? exceeds?)",
            r"exceeds? the (?:model'?s? )?(?:maximum )?context (?:window|length|size)",
            r"context window (?:is )?exceeded",
            r"too many tokens in (?:the )?(?:prompt|input|request)",  # llama.cpp, Ollama
            r"exceeds the available context size",  # llama.cpp server
            r"prompt is too (?:big|large) compared to (?:the )?kv size",  # llama.cpp forks
            r"requested tokens (?:\(\d+\) )?exceed context window",  # llama-cpp-python
            r"is too long to fit into the model",  # vLLM (older)
            r"too large for model with \d+ maximum context",  # Mistral
            r"prompt too long; exceeded (?:max )?context length",  # Ollama
            r"exceeded model token limit",  # Kimi (Moonshot)
            r"is longer than the model'?s context length",  # Together AI
            r"requested \d+ tokens.{0,200}context",  # vLLM
            r"prompt (?:tokens )?(?:exceeds?|is longer than) (?:the )?(?:max|context)",
            r"request too large for model",  # a 413 body
        ]
    )
)
# Limits on rate or quota mention tokens too, but compacting does not help them.
_NOT_OVERFLOW = re.compile(
    r"rate.?limit|per minute|per-minute|per day|tokens per|\btpm\b|quota|too many requests|"
    r"throttl|resource_exhausted|overloaded"
)
# A figure: from the start of a run of digits (and commas), at most 16 characters, so that
# no pattern scans a long run once per position (a 40,000-digit run took seconds).
_N = r"(?<![\d,])(\d[\d,]{0,15})"
# The INPUT figure, most specific first: OpenAI's max_tokens wording "you requested 9000
# tokens (1000 in the messages, 8000 in the completion)" is 1,000 input tokens, not 9,000;
# "resulted in N tokens (M in the messages, K in the functions)" is N. vLLM's "at least N"
# is a lower bound of its count (it stops counting there): still a sound floor.
_SENT = [
    re.compile(p)
    for p in (
        r"resulted in " + _N + r" tokens",  # OpenAI, Azure (the messages and the functions)
        _N + r" in the messages",  # OpenAI, vLLM
        _N + r" in your prompt",  # OpenAI legacy completions, llama-cpp-python server
        r"prompt contains (?:at least )?" + _N + r" (?:input )?tokens",  # vLLM >= 0.20, Mistral
        r"requested tokens \(" + _N + r"\)",  # llama-cpp-python
        r"prompt \(total length " + _N,  # vLLM (older)
        r"prompt is too long: " + _N,  # Anthropic, and without "tokens"
        r"input \(" + _N + r" tokens\) is longer",  # Together AI
        r"input token count \(" + _N,  # Gemini
        r"decoder prompt \(length " + _N,  # vLLM V1
        r"input length \(" + _N + r" tokens",  # SGLang
        r"request \(" + _N + r" tokens\) exceeds",  # llama.cpp
        r"keep the first " + _N + r" tokens",  # LM Studio
        r"n_keep: " + _N,  # LM Studio, llama.cpp
        r"input length " + _N + r" exceeds",  # LM Studio (older)
        r"given: " + _N + r" `inputs` tokens",  # TGI
        r"context limit: " + _N + r" ?\+",  # Anthropic input + max_tokens
        r"(?:request|prompt) has " + _N + r" input tokens",  # vLLM
        r"(?:too long:|prompt has|input has|got) ?" + _N + r" tokens",
        r"(?:you requested|requested) ?" + _N + r" tokens",  # a total: the last resort
    )
]
_LIMIT = [
    re.compile(p)
    for p in (
        r"maximum context length is " + _N,  # OpenAI, vLLM
        r"tokens allowed \(" + _N,  # Gemini
        r"maximum model length of " + _N,  # vLLM V1
        r"maximum allowed length \(" + _N,  # SGLang
        r"context size \(" + _N,  # llama.cpp
        r"context length of only " + _N,  # LM Studio
        r"n_ctx: " + _N,  # LM Studio, llama.cpp
        r"exceeds context length " + _N,  # LM Studio (older)
        r"must be <= ?" + _N,  # TGI
        r"must have less than " + _N,  # TGI
        r"range of input length should be \[\d+, ?(\d[\d,]{0,15})",  # DashScope ("[1,30720]")
        r"context window of " + _N,  # llama-cpp-python
        r"model with " + _N + r" maximum context length",  # Mistral
        r"\(context length " + _N,  # vLLM (older)
        r"maximum context length: " + _N,
        r"model'?s context length \(" + _N,  # Together AI
        r"model token limit: " + _N,  # Kimi (its "requested" is a total: not read)
        r"> ?" + _N,  # Anthropic
        r"(?:maximum(?: is)?|limit(?: is)?|context size(?: is)?|context length is)\s*" + _N,
    )
]
# OpenRouter states the input in parts: "(81684 of text input, 3748 of tool input, ...)".
_INPUT_PARTS = re.compile(r"\(((?:\d[\d,]{0,15} of [a-z]{1,20} input(?:, )?)+)")
_INPUT_PART = re.compile(_N + r" of [a-z]{1,20} input")
# The completion's share: when it alone fills the limit, no compaction makes the call fit
# ("8192 in the completion" of an 8,192-token model); the error is the host's max_tokens.
_COMPLETION = [
    re.compile(p)
    for p in (
        _N + r" (?:in|for) the completion",  # OpenAI, vLLM, llama-cpp-python server
        r"requested " + _N + r" output tokens",  # vLLM >= 0.20
        _N + r" in the output",  # OpenRouter
        r"max_completion_tokens'? is too large: " + _N,  # vLLM
    )
]
_STATUS_ATTRIBUTES = ("status_code", "status", "http_status")
_CODE_ATTRIBUTES = ("code", "type")
_OVERFLOW_CODES = frozenset({"context_length_exceeded", "exceed_context_size_error"})


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
    of OpenAI, Anthropic, DashScope, Gemini and OpenAI-compatible local servers. Not when the
    completion's share the error states alone fills the limit ("8192 in the completion" of an
    8,192-token model): that is the host's ``max_tokens``, and no compaction makes it fit.
    """
    for error in _errors(exc):
        statuses = [getattr(error, name, None) for name in _STATUS_ATTRIBUTES]
        if 429 in statuses:
            continue  # a rate limit or quota, whatever its text says
        text = _text_of(error).lower()
        if _completion_fills_limit(_MARKUP.sub(" ", text)):
            continue  # the host's max_tokens alone fills the window: compacting cannot help
        if 413 in statuses:
            return True
        for name in _CODE_ATTRIBUTES:
            value = getattr(error, name, None)
            if isinstance(value, str) and value.lower() in _OVERFLOW_CODES:
                return True
        if _OVERFLOW_TEXT.search(text) and not _NOT_OVERFLOW.search(text):
            return True
    return False


def _text_of(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}"
    body = getattr(error, "body", None) or getattr(error, "message", None)
    return text if body is None else f"{text} {body}"


# Figures outside these bounds are misreads or nonsense ("limit 1 token", 10**12 tokens, a
# 5,000-digit number): no window is that small or that large, so they are ignored.
MIN_PLAUSIBLE_TOKENS = 256
MAX_PLAUSIBLE_TOKENS = 10**8
_MAX_DIGITS = 12  # a bound before int(): Python refuses to parse more than 4,300 digits
_MARKUP = re.compile(r"</?[a-z!][^<>]*>")  # an HTML tag: a proxy's error page ("<title>413 ...")


def overflow_figures(exc: BaseException) -> tuple[int | None, int | None]:
    """(input tokens the provider counted, its limit) as an overflow error states them.

    The input figure, not a total with the completion's share ("N in the messages" of
    OpenAI's ``max_tokens`` wording; "N + M > limit" of Anthropic's): either may be None.
    Figures inside HTML markup, or outside ``MIN_PLAUSIBLE_TOKENS``..``MAX_PLAUSIBLE_TOKENS``,
    are not read.
    """
    sent: int | None = None
    limit: int | None = None
    for error in _errors(exc):
        text = _MARKUP.sub(" ", _text_of(error).lower())
        if sent is None:
            sent = _input_parts(text) or _first_figure(_SENT, text)
        if limit is None:
            limit = _first_figure(_LIMIT, text)
    return sent, limit


def _completion_fills_limit(text: str) -> bool:
    completion = _first_figure(_COMPLETION, text)
    limit = _first_figure(_LIMIT, text) if completion else None
    return completion is not None and limit is not None and completion >= limit


def _input_parts(text: str) -> int | None:
    """The sum of the parts of the first input stated in parts, if plausible."""
    group = _INPUT_PARTS.search(text)
    if group is None:
        return None
    parts = [m.group(1).replace(",", "") for m in _INPUT_PART.finditer(group.group(1))]
    if any(len(digits) > _MAX_DIGITS for digits in parts):
        return None
    total = sum(int(digits) for digits in parts)
    return total if MIN_PLAUSIBLE_TOKENS <= total <= MAX_PLAUSIBLE_TOKENS else None


def _first_figure(patterns: list[re.Pattern[str]], text: str) -> int | None:
    for pattern in patterns:
        for match in pattern.finditer(text):
            digits = match.group(1).replace(",", "")
            if len(digits) > _MAX_DIGITS:
                continue
            figure = int(digits)
            if MIN_PLAUSIBLE_TOKENS <= figure <= MAX_PLAUSIBLE_TOKENS:
                return figure
    return None


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
