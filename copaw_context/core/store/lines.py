"""What every store does alike: keys, record keys, line ranges, text bytes and search tokens.

Both stores call these, so a line range, a record's key or a search hit is the same whether
the bytes come from a file or from the database.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO, Protocol, TypeVar

from copaw_context.core.errors import redact
from copaw_context.core.store.protocol import BlobLines, StoreError

__all__ = [
    "BLOB_NAME",
    "check_key",
    "check_range",
    "encode_text",
    "folder_key",
    "folder_of",
    "line_range",
    "matches",
    "new_blob_key",
    "newline_offsets",
    "read_line_range",
    "record_key",
    "redact",
    "search_tokens",
]

BLOB_NAME = re.compile(r"[0-9a-f]{32}\.txt")
"""The name of a blob the stores write (the offload store's ``<uuid4 hex>.txt``)."""
_KEY_PART = re.compile(r"[A-Za-z0-9._-]{1,200}")
_SURROGATE_UTF8 = re.compile(rb"\xed[\xa0-\xbf][\x80-\xbf]")
_WORD = re.compile(r"[0-9A-Za-z_]+")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]+")
_CHUNK = 1 << 16
_WORD_CHARS = 200
"""A longer word is indexed by its first characters (an index entry has a size limit)."""


def check_key(key: str, what: str = "key") -> str:
    """``key`` if it is a workspace-relative path of plain names (``a/b.jsonl``); a
    :class:`StoreError` otherwise (no ``..``, no absolute path, no empty part)."""
    if not isinstance(key, str) or not key:
        raise StoreError(f"a store {what} must be a non-empty string, got {key!r}")
    for part in key.split("/"):
        if not _KEY_PART.fullmatch(part) or part.strip(".") == "":
            raise StoreError(
                f"store {what} {key!r} is not a workspace-relative path of plain names "
                "(letters, digits, '.', '_' and '-', separated by '/')"
            )
    return key


def folder_key(store_workspace: Path, workspace: Path | None, directory: Path) -> str | None:
    """The key of ``directory`` (absolute) in the file store of ``store_workspace`` when
    the caller's ``workspace`` is that one; ``None`` without a workspace, for a store of
    another workspace, or a folder outside it or not a key of plain names (the caller then
    runs the file code itself)."""
    if workspace is None:
        return None
    absolute = Path(workspace).expanduser().absolute()
    if store_workspace != absolute:
        return None
    try:
        return check_key(directory.relative_to(absolute).as_posix(), "folder")
    except (ValueError, StoreError):
        return None


class _InWorkspace(Protocol):
    @property
    def workspace(self) -> Path: ...


_Files = TypeVar("_Files", bound=_InWorkspace)


def folder_of(
    files: _Files | None, workspace: Path | None, directory: Path
) -> tuple[_Files, str] | None:
    """``files`` (a workspace's file store) and the key of ``directory`` in it: how the
    offload store and the dialog archive reach their folder through the store; ``None``
    (the caller runs the file code itself) without a store, or when :func:`folder_key` is
    ``None``."""
    if files is None:
        return None
    key = folder_key(files.workspace, workspace, directory)
    return None if key is None else (files, key)


def new_blob_key(folder: str) -> str:
    """A fresh ``<folder>/<32 hex>.txt``."""
    return f"{check_key(folder, 'folder')}/{uuid.uuid4().hex}.txt"


def record_key(data: bytes) -> str | None:
    """The key a JSONL line names: ``"<session_id>/<archive_id>"`` (the archive's lines),
    ``None`` for a line without both (or not a JSON object)."""
    try:
        value = json.loads(data)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    session, archive_id = value.get("session_id"), value.get("archive_id")
    if isinstance(session, str) and isinstance(archive_id, str):
        return f"{session}/{archive_id}"
    return None


def encode_text(parts: Sequence[str], separator: str) -> bytes:
    """``separator.join(parts)`` in UTF-8, a lone surrogate as U+FFFD (as the offload's
    files are written)."""
    text = separator.join(parts)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raw = text.encode("utf-8", "surrogatepass")
        return _SURROGATE_UTF8.sub("\ufffd".encode(), raw)


def newline_offsets(data: bytes) -> list[int]:
    """The byte offset of every ``\\n`` in ``data``."""
    offsets: list[int] = []
    at = data.find(b"\n")
    while at >= 0:
        offsets.append(at)
        at = data.find(b"\n", at + 1)
    return offsets


def check_range(first: int, last: int | None) -> None:
    """A :class:`StoreError` unless ``first >= 1`` and ``last`` is ``None`` or ``>= first``."""
    if isinstance(first, bool) or not isinstance(first, int) or first < 1:
        raise StoreError(f"first line must be an integer >= 1, got {first!r}")
    if last is not None and (isinstance(last, bool) or not isinstance(last, int) or last < first):
        raise StoreError(f"last line must be None or an integer >= first ({first}), got {last!r}")


def line_range(offsets: Sequence[int], size: int, first: int, last: int | None) -> tuple[int, int]:
    """The byte span ``[start, end)`` of lines ``first..last`` of a blob of ``size`` bytes
    whose newlines are at ``offsets`` (a line ends after its ``\\n``)."""
    check_range(first, last)
    start = 0 if first == 1 else (offsets[first - 2] + 1 if first - 2 < len(offsets) else size)
    if last is None or last - 1 >= len(offsets):
        return start, size
    return start, offsets[last - 1] + 1


def read_line_range(stream: BinaryIO, first: int, last: int | None) -> BlobLines:
    """Lines ``first..last`` of an open file, read in chunks (only the range is kept)."""
    check_range(first, last)
    line, kept, newlines = 1, bytearray(), 0
    while chunk := stream.read(_CHUNK):
        at = 0
        for index in _newlines_in(chunk):
            if first <= line and (last is None or line <= last):
                kept += chunk[at : index + 1]
            line, at = line + 1, index + 1
            newlines += 1
        if first <= line and (last is None or line <= last):
            kept += chunk[at:]
    return BlobLines(bytes(kept), newlines + 1)


def _newlines_in(chunk: bytes) -> Iterator[int]:
    at = chunk.find(b"\n")
    while at >= 0:
        yield at
        at = chunk.find(b"\n", at + 1)


def search_tokens(text: str) -> set[str]:
    """The tokens a search matches on: each word of letters and digits (lowercased), and
    each character bigram of a CJK run (a single character alone). Spelled in ASCII
    (``w:word``, ``h:<hex>``), so a database of any locale indexes them the same. A word
    is cut to its first 200 characters: a line of one huge word still fits the index."""
    tokens = {f"w:{word[:_WORD_CHARS].lower()}" for word in _WORD.findall(text)}
    for run in _HAN.findall(text):
        grams = [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]
        tokens.update(f"h:{gram.encode('utf-8').hex()}" for gram in grams)
    return tokens


def matches(query_tokens: Iterable[str], data: bytes) -> bool:
    """Whether the line ``data`` holds every token of the query."""
    have = search_tokens(data.decode("utf-8", errors="replace"))
    return all(token in have for token in query_tokens)
