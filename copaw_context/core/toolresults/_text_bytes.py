"""Encoded sizes, prefix cuts and surrogate scrubbing that look only at the part they need.

Text measured in UTF-8 (the only encoding the pipeline uses) is handled in time and memory
proportional to the prefix kept, never to the whole text: a character is at least one byte,
so a prefix of ``n`` bytes lies within the first ``n`` characters. Whole-text sizes are
summed chunk by chunk, so memory stays bounded. Other encodings take the plain (whole
text) path. Lone surrogates are measured as 3 bytes, the size of the U+FFFD they become.
"""

from __future__ import annotations

import codecs
import re

__all__ = [
    "CHUNK_CHARS",
    "codec_name",
    "encode_measured",
    "encoded_size",
    "is_utf8",
    "scrub_surrogates",
    "utf8_cut",
    "utf8_scrubbed",
    "utf8_size",
]

CHUNK_CHARS = 1 << 16
"""Characters encoded at once by the chunked helpers (at most 256 KB of UTF-8)."""

# A lone surrogate encoded with ``surrogatepass``: valid UTF-8 never holds these sequences.
_SURROGATE_UTF8 = re.compile(rb"\xed[\xa0-\xbf][\x80-\xbf]")
_FFFD_UTF8 = "\ufffd".encode()


def codec_name(encoding: str) -> str:
    """The canonical codec name of ``encoding``; ValueError for an unknown one."""
    try:
        return codecs.lookup(encoding).name
    except LookupError:
        raise ValueError(
            f"encoding={encoding!r} is not a known text encoding; use e.g. 'utf-8'"
        ) from None


def is_utf8(encoding: str) -> bool:
    """Whether ``encoding`` names UTF-8 (any spelling)."""
    return codec_name(encoding) == "utf-8"


def utf8_scrubbed(text: str) -> bytes:
    """``scrub_surrogates(text)`` in UTF-8, without building the scrubbed string."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # the UTF-8 encoder fails only on lone surrogates
        return _SURROGATE_UTF8.sub(_FFFD_UTF8, text.encode("utf-8", "surrogatepass"))


def scrub_surrogates(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (idempotent).

    Lone surrogates (e.g. from ``surrogateescape`` decoding) are not valid text in any UTF
    encoding. U+FFFD has the same UTF-8 size (3 bytes) and length (1 character) as the
    surrogate it replaces, so positions stay put and a saved file and an excerpt agree byte
    for byte. Returns ``text`` itself when it has none; ASCII text is answered at once and
    other text is checked by the UTF-8 encoder chunk by chunk (no whole-text copy).
    """
    if text.isascii():
        return text
    for start in range(0, len(text), CHUNK_CHARS):
        try:
            text[start : start + CHUNK_CHARS].encode("utf-8")
        except UnicodeEncodeError:
            break
    else:
        return text
    pieces = [text[:start]]
    for at in range(start, len(text), CHUNK_CHARS):
        pieces.append(utf8_scrubbed(text[at : at + CHUNK_CHARS]).decode("utf-8"))
    return "".join(pieces)


def encode_measured(text: str, encoding: str) -> bytes:
    """``text`` encoded for measuring: lone surrogates are counted, never rejected.

    ``surrogatepass`` for the UTF codecs (3 bytes in UTF-8, like U+FFFD), an over-estimating
    escape for the others.
    """
    name = codec_name(encoding)
    errors = (
        "surrogatepass" if name.startswith(("utf-8", "utf-16", "utf-32")) else "backslashreplace"
    )
    return text.encode(encoding, errors=errors)


def utf8_size(text: str, start: int = 0, end: int | None = None) -> int:
    """UTF-8 size of ``text[start:end]`` (surrogates as 3 bytes), in bounded memory."""
    end = len(text) if end is None else min(end, len(text))
    if start >= end:
        return 0
    if text.isascii():
        return end - start
    total = 0
    for at in range(start, end, CHUNK_CHARS):
        total += len(text[at : min(at + CHUNK_CHARS, end)].encode("utf-8", "surrogatepass"))
    return total


def encoded_size(text: str, encoding: str, end: int | None = None) -> int:
    """Size of ``text[:end]`` in ``encoding`` as :func:`encode_measured` counts it."""
    if is_utf8(encoding):
        return utf8_size(text, 0, end)
    return len(encode_measured(text if end is None else text[:end], encoding))


def utf8_cut(text: str, max_bytes: int, end: int | None = None) -> tuple[int, int]:
    """``(characters, bytes)`` of the longest prefix of ``text[:end]`` within ``max_bytes``.

    Never splits a character; a non-empty text always keeps its first character. Looks at
    no more than the first ``max_bytes + 1`` characters.
    """
    end = len(text) if end is None else min(end, len(text))
    limit = max(max_bytes, 0)
    head = text[: min(end, limit + 1)]
    if head.isascii():
        chars = min(len(head), limit)
    else:
        data = head.encode("utf-8", "surrogatepass")
        if len(data) <= limit:
            return len(head), len(data)  # all of text[:end] fits
        cut = limit
        while cut > 0 and (data[cut] & 0xC0) == 0x80:  # step back off continuation bytes
            cut -= 1
        chars = len(data[:cut].decode("utf-8", "surrogatepass"))
        if chars:
            return chars, cut
    if chars == 0 and end > 0:
        return 1, len(text[:1].encode("utf-8", "surrogatepass"))
    return chars, chars
