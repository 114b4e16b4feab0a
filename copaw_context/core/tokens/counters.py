"""Token counters that work offline: exact OpenAI and Qwen vocabularies, or a byte estimate.

The reference counted ``UTF-8 bytes / 4`` for every model, which under-counts code and
over- or under-counts CJK depending on the vocabulary, so compaction fired too late. Here a
real BPE vocabulary is the default. The vocabularies ship inside installed wheels and load
without network access (see :mod:`copaw_context.core.tokens.vocab`).
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
import threading
import unicodedata
from collections.abc import Callable, Iterator
from typing import Literal, Protocol, runtime_checkable

import tiktoken

from copaw_context.core.errors import ConfigError
from copaw_context.core.tokens.vocab import (
    OPENAI_PAT_STR,
    OPENAI_SHA256,
    OPENAI_SPECIAL_TOKENS,
    OPENAI_URL,
    bundled_openai_file,
    load_openai_encoding,
    load_qwen_encoding,
    package_file,
    parse_ranks,
)

__all__ = [
    "TOKEN_COUNTER_CHOICES",
    "EstimateTokenCounter",
    "QwenTokenCounter",
    "TiktokenCounter",
    "TokenCounter",
    "counter_in_use_is_exact",
    "counter_is_exact",
    "make_token_counter",
    "make_token_counter_async",
    "resolve_counter_name",
]

logger = logging.getLogger("copaw_context")

TOKEN_COUNTER_CHOICES: tuple[str, ...] = ("auto", "estimate", "qwen", "o200k_base", "cl100k_base")

OpenAIEncodingName = Literal["o200k_base", "cl100k_base"]

# Every vocabulary read goes through this module's ``_package_file`` (tests replace it to
# simulate missing or corrupt data); the other aliases keep the names used before the split.
_package_file = package_file
_OPENAI_URL = OPENAI_URL
_OPENAI_SHA256 = OPENAI_SHA256
_OPENAI_PAT_STR = OPENAI_PAT_STR
_OPENAI_SPECIAL_TOKENS = OPENAI_SPECIAL_TOKENS
_parse_ranks = parse_ranks

# tiktoken's regex engine panics (a BaseException) on whitespace runs of ~0.5M characters,
# so long texts are encoded in pieces of at most this many characters.
_CHUNK_CHARS = 100_000

# Ordered: the first pattern found in the lower-cased model name wins.
_AUTO_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"qwen|qwq"), "qwen"),
    (
        re.compile(r"gpt-4o|gpt-4\.[15]|gpt-5|gpt-oss|chatgpt|(?<![a-z0-9])o[134](?![a-z0-9])"),
        "o200k_base",
    ),
    (re.compile(r"gpt-4|gpt-3\.5|gpt-35|text-embedding"), "cl100k_base"),
)
# Unknown models (Claude, DeepSeek, GLM, Llama, ...): a real BPE is far closer than bytes/4
# for code and CJK, and UsageCalibration corrects the rest once the provider reports usage.
_AUTO_DEFAULT = "o200k_base"

_encodings: dict[str, tiktoken.Encoding] = {}
_encodings_lock = threading.Lock()
_warned: set[str] = set()


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens of a text; never raises for any ``str``."""

    @property
    def name(self) -> str: ...

    def count(self, text: str) -> int: ...


class EstimateTokenCounter:
    """UTF-8 bytes / ``divisor``, rounded up (a CJK character is 3 bytes)."""

    def __init__(self, divisor: float = 4) -> None:
        if (
            isinstance(divisor, bool)
            or not isinstance(divisor, int | float)
            or not 2 <= divisor <= 5  # also rejects NaN
        ):
            raise ConfigError(
                "estimate_divisor", divisor, "expected a number from 2 to 5 (UTF-8 bytes per token)"
            )
        self._divisor = float(divisor)

    @property
    def name(self) -> str:
        return f"estimate/{self._divisor:g}"

    @property
    def divisor(self) -> float:
        return self._divisor

    def count(self, text: str) -> int:
        return math.ceil(_utf8_len(text) / self._divisor)


class _BpeCounter:
    """Shared by the vocabulary-backed counters."""

    _encoding: tiktoken.Encoding
    _normalize_nfc = False

    @property
    def name(self) -> str:
        return self._encoding.name

    def count(self, text: str) -> int:
        return _count_tokens(self._encoding, self._prepare(text))

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (special-token text is encoded as ordinary text)."""
        chunks = _chunks(self._prepare(text))
        return [i for chunk in chunks for i in self._encoding.encode_ordinary(chunk)]

    def _prepare(self, text: str) -> str:
        return unicodedata.normalize("NFC", text) if self._normalize_nfc else text

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


class TiktokenCounter(_BpeCounter):
    """Exact OpenAI token counts (``o200k_base`` or ``cl100k_base``), loaded offline."""

    def __init__(self, encoding_name: OpenAIEncodingName) -> None:
        if encoding_name not in OPENAI_SHA256:
            raise ConfigError(
                "encoding_name", encoding_name, f"expected one of {', '.join(OPENAI_SHA256)}"
            )
        self._encoding = _cached_encoding(encoding_name, lambda: _load_openai(encoding_name))


class QwenTokenCounter(_BpeCounter):
    """Qwen2/2.5/3 token counts (NFC first) from dashscope's bundled ``qwen.tiktoken``.

    Qwen3.5+ uses a larger vocabulary; counts for it differ per sentence but agree to ~0.1%
    on long mixed text.
    """

    _normalize_nfc = True

    def __init__(self) -> None:
        self._encoding = _cached_encoding("qwen", _load_qwen)


def resolve_counter_name(spec: str, model_name: str | None = None) -> str:
    """Map a counter spec to a concrete choice; ``"auto"`` picks by ``model_name``.

    Raises :class:`ConfigError` (a ``ValueError``) for a spec not in ``TOKEN_COUNTER_CHOICES``.
    """
    normalized = spec.strip().lower() if isinstance(spec, str) else spec
    if normalized not in TOKEN_COUNTER_CHOICES:
        raise ConfigError(
            "token_counter", spec, f"expected one of {', '.join(TOKEN_COUNTER_CHOICES)}"
        )
    if normalized != "auto":
        return normalized
    lowered = (model_name or "").lower()
    for pattern, choice in _AUTO_RULES:
        if pattern.search(lowered):
            return choice
    return _AUTO_DEFAULT


def counter_is_exact(spec: str, model_name: str | None = None) -> bool:
    """Whether ``spec`` gives the model's own vocabulary (so usage calibration is not needed).

    False for ``estimate`` and for ``auto`` when no rule matched the model name (the
    ``o200k_base`` fallback for e.g. Claude, DeepSeek or GLM is only an approximation).
    """
    if resolve_counter_name(spec, model_name) == "estimate":
        return False
    if spec.strip().lower() != "auto":
        return True
    lowered = (model_name or "").lower()
    return any(pattern.search(lowered) for pattern, _ in _AUTO_RULES)


def counter_in_use_is_exact(
    counter: TokenCounter, spec: str, model_name: str | None = None
) -> bool:
    """Whether ``counter`` (as built for ``spec``) counts with the model's own vocabulary.

    A vocabulary that failed to load falls back to the byte estimate, which is then an
    approximation whatever the spec said.
    """
    return not isinstance(counter, EstimateTokenCounter) and counter_is_exact(spec, model_name)


def make_token_counter(
    spec: str = "auto", *, model_name: str | None = None, estimate_divisor: float = 4
) -> TokenCounter:
    """Build the counter for ``spec``; falls back to the byte estimate if a vocabulary fails.

    A failed load is logged once per vocabulary as a warning on the ``copaw_context`` logger;
    it never raises. Bad ``spec`` or ``estimate_divisor`` values raise :class:`ConfigError`.
    """
    fallback = EstimateTokenCounter(estimate_divisor)
    choice = resolve_counter_name(spec, model_name)
    try:
        if choice == "qwen":
            return QwenTokenCounter()
        if choice == "o200k_base":
            return TiktokenCounter("o200k_base")
        if choice == "cl100k_base":
            return TiktokenCounter("cl100k_base")
    except Exception as exc:
        if choice not in _warned:
            _warned.add(choice)
            logger.warning(
                "could not load the %s tokenizer (%s: %s); "
                "counting tokens as UTF-8 bytes / %g instead",
                choice,
                type(exc).__name__,
                exc,
                fallback.divisor,
            )
    return fallback


async def make_token_counter_async(
    spec: str = "auto", *, model_name: str | None = None, estimate_divisor: float = 4
) -> TokenCounter:
    """:func:`make_token_counter` in a worker thread (the first load reads ~2-4 MB)."""
    return await asyncio.to_thread(
        make_token_counter, spec, model_name=model_name, estimate_divisor=estimate_divisor
    )


def _utf8_len(text: str) -> int:
    if text.isascii():
        return len(text)
    # surrogatepass: lone surrogates (e.g. from broken JSON) count 3 bytes instead of raising.
    return len(text.encode("utf-8", "surrogatepass"))


def _count_tokens(encoding: tiktoken.Encoding, text: str) -> int:
    if not text:
        return 0
    return sum(_encode_length(encoding, chunk) for chunk in _chunks(text))


def _encode_length(encoding: tiktoken.Encoding, text: str) -> int:
    try:
        return len(encoding.encode_ordinary(text))
    except Exception as exc:
        problem: BaseException = exc
    except BaseException as exc:
        # pyo3's PanicException derives from BaseException; anything else is re-raised.
        if type(exc).__name__ != "PanicException":
            raise
        problem = exc
    if "encode" not in _warned:
        _warned.add("encode")
        logger.warning(
            "%s failed on a %d-character text (%s); estimating it as bytes/4",
            encoding.name,
            len(text),
            type(problem).__name__,
        )
    return math.ceil(_utf8_len(text) / 4)


def _chunks(text: str) -> Iterator[str]:
    size, start = _CHUNK_CHARS, 0
    while len(text) - start > size:
        end = _cut_point(text, start, start + size)
        yield text[start:end]
        start = end
    yield text[start:]


def _cut_point(text: str, low: int, high: int) -> int:
    """Where to end the chunk ``text[low:...]``: at most ``high``, at least half a chunk."""
    floor = low + (high - low) // 2
    # Exact: no pre-token of these vocabularies spans a newline followed by a non-space.
    newline = text.rfind("\n", floor, high)
    while newline != -1:
        if not text[newline + 1].isspace():
            return newline + 1
        newline = text.rfind("\n", floor, newline)
    # Nearly exact: start of a word after whitespace.
    for position in range(high, floor, -1):
        if text[position - 1].isspace() and not text[position].isspace():
            return position
    return high


def _cached_encoding(key: str, loader: Callable[[], tiktoken.Encoding]) -> tiktoken.Encoding:
    encoding = _encodings.get(key)
    if encoding is not None:
        return encoding
    with _encodings_lock:
        encoding = _encodings.get(key)
        if encoding is None:
            encoding = loader()
            _encodings[key] = encoding
    return encoding


def _load_openai(name: str) -> tiktoken.Encoding:
    return load_openai_encoding(name, _package_file)


def _load_qwen() -> tiktoken.Encoding:
    return load_qwen_encoding(_package_file)


def _bundled_openai_file(name: str) -> bytes:
    return bundled_openai_file(name, _package_file)
