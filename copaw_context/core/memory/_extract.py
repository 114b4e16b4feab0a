"""Readable text of the memory sources, cut into searchable chunks.

Private to :mod:`copaw_context.core.memory`. Dialog archive lines come in two shapes: ours,
``{"session_id", "archive_id", "form", "agent_name", "archived_at", "timestamp", "message":
{...}}``, and QwenPaw's, the plain message dict (``{"id", "name", "role", "content",
"timestamp", ...}``). Content blocks of AgentScope 1.x and 2.x are both understood: text, tool
calls (``tool_use`` / ``tool_call``), tool results and hints; thinking and binary data are not
indexed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from copaw_context.core.memory.markdown import normalise_text
from copaw_context.core.toolresults.truncation import scrub_surrogates

__all__ = [
    "Chunk",
    "markdown_chunks",
    "message_chunks",
    "query_terms",
    "hit_line",
    "record_text",
    "snippet",
    "summary_chunks",
    "text_chunks",
]

_HEADING = re.compile(r"^\s{0,3}#{1,6}[ \t]+(.*?)[ \t#]*$")
_ITEM = re.compile(r"^\s{0,3}(?:[-*+]|\d{1,3}[.)])[ \t]+")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_MAX_CHUNK_LINES = 40
# The first line of each entry of dialog/summaries/YYYY-MM-DD.md (see memory.cleared).
SUMMARY_ENTRY = re.compile(r"^# /(clear|new) · (.*)$")


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of searchable text and where it starts (1-based line of its file); an archived
    message's chunks name its session."""

    line: int
    body: str
    label: str = ""
    stamp: str = ""
    session: str = ""


def markdown_chunks(text: str, first_line: int = 1, max_chars: int = 4000) -> list[Chunk]:
    """Chunks of a Markdown file: one per list item or paragraph, labelled by its heading."""
    chunks: list[Chunk] = []
    heading = ""
    current: list[str] = []
    start = first_line
    in_fence = False

    def flush() -> None:
        body = "\n".join(current).rstrip()
        for line, piece in _pieces(body, start, max_chars):
            chunks.append(Chunk(line, piece, heading))
        current.clear()

    for number, raw in enumerate(scrub_surrogates(text).split("\n"), start=first_line):
        line = raw.rstrip("\r")  # numbered like read_file: only "\n" ends a line
        if _FENCE.match(line):
            in_fence = not in_fence
        title = None if in_fence else _HEADING.match(line)
        if title:
            flush()
            heading = title.group(1).strip()
            chunks.append(Chunk(number, heading, heading))
            continue
        blank = not line.strip()
        starts_item = not in_fence and _ITEM.match(line) is not None
        if (blank and not in_fence) or starts_item or len(current) >= _MAX_CHUNK_LINES:
            flush()
        if blank and not in_fence:
            continue
        if not current:
            start = number
        current.append(line)
    flush()
    return chunks


def _pieces(body: str, first_line: int, max_chars: int) -> Iterator[tuple[int, str]]:
    """``body`` (lines from ``first_line``) in pieces of ``max_chars``, each with its line."""
    line = first_line
    for offset in range(0, len(body), max_chars):
        piece = body[offset : offset + max_chars]
        if piece.strip():
            yield line, piece
        line += piece.count("\n")


def text_chunks(
    text: str, first_line: int = 1, max_chars: int = 4000, max_lines: int = _MAX_CHUNK_LINES
) -> list[Chunk]:
    """Chunks of plain text (a saved tool output): runs of up to ``max_lines`` lines and
    ``max_chars`` characters, each with the 1-based line it starts on (a longer line is cut
    into pieces; a run never starts with a blank line)."""
    chunks: list[Chunk] = []
    current: list[str] = []
    size, start = 0, first_line

    def flush() -> None:
        for line, piece in _pieces("\n".join(current).rstrip(), start, max_chars):
            chunks.append(Chunk(line, piece))
        current.clear()

    for number, raw in enumerate(scrub_surrogates(text).split("\n"), start=first_line):
        line = raw.rstrip("\r")
        if current and (len(current) >= max_lines or size + len(line) > max_chars):
            flush()
        if not current:
            if not line.strip():
                continue
            start, size = number, 0
        current.append(line)
        size += len(line) + 1
    flush()
    return chunks


def summary_chunks(text: str, max_chars: int = 4000) -> list[Chunk]:
    """Chunks of a file of cleared summaries: each entry's Markdown, labelled by the entry
    (``/clear summary``) and the section it is in, all at the entry's first line."""
    chunks: list[Chunk] = []
    lines = scrub_surrogates(text).split("\n")
    starts = [i for i, line in enumerate(lines) if SUMMARY_ENTRY.match(line.rstrip("\r"))]
    for which, begin in enumerate(starts):
        end = starts[which + 1] if which + 1 < len(starts) else len(lines)
        match = SUMMARY_ENTRY.match(lines[begin].rstrip("\r"))
        assert match is not None
        entry = f"/{match.group(1)} summary"
        stamp = match.group(2).split(" · ", 1)[0]
        body = "\n".join(lines[begin + 1 : end])
        for chunk in markdown_chunks(body, begin + 2, max_chars):
            label = f"{entry}: {chunk.label}" if chunk.label else entry
            # Each at the entry's first line: one hit per summary, read whole from there.
            chunks.append(Chunk(begin + 1, chunk.body, label, stamp))
    return chunks


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def _block_texts(block: Any) -> Iterator[str]:
    if isinstance(block, str):
        yield block
        return
    if not isinstance(block, Mapping):
        return
    kind = block.get("type")
    if kind == "text":
        yield _as_text(block.get("text", ""))
    elif kind in ("tool_use", "tool_call"):
        yield f"[tool call {block.get('name', '?')}] {_as_text(block.get('input', ''))}"
    elif kind == "tool_result":
        output = block.get("output", "")
        parts = output if isinstance(output, list) else [output]
        inner = "\n".join(text for part in parts for text in _block_texts(part))
        yield f"[tool result {block.get('name', '?')}] {inner}"
    elif kind == "hint":
        hint = block.get("hint", "")
        for part in hint if isinstance(hint, list) else [hint]:
            yield from _block_texts(part)


def record_text(record: Mapping[str, Any]) -> tuple[str, str, str]:
    """(text, speaker label, timestamp) of one archive line in either shape."""
    message = record.get("message")
    if not isinstance(message, Mapping) or "session_id" not in record:
        message = record
    content = message.get("content", "")
    blocks = content if isinstance(content, list) else [content]
    text = "\n".join(piece for block in blocks for piece in _block_texts(block) if piece)
    role = message.get("role")
    name = message.get("name")
    label = str(role) if role else ""
    if name and name != role:
        label = f"{label} {name}".strip()
    stamp = record.get("timestamp") or message.get("timestamp") or message.get("created_at") or ""
    return normalise_text(text), label, str(stamp)


def message_chunks(
    record: Mapping[str, Any], line: int, max_chars: int = 4000, max_total: int = 65536
) -> list[Chunk]:
    """Chunks of one archive line: its text cut into ``max_chars`` pieces, at most ``max_total``
    characters in all (a huge tool output is indexed by its beginning)."""
    text, label, stamp = record_text(record)
    text = text.strip()[:max_total]
    session = record.get("session_id") if isinstance(record.get("message"), Mapping) else None
    session = session if isinstance(session, str) else ""
    return [
        Chunk(line, text[offset : offset + max_chars], label, stamp, session)
        for offset in range(0, len(text), max_chars)
    ]


def query_terms(query: object) -> list[str]:
    """The distinct words of a query (quotes and NUL are separators), at most 16."""
    if not isinstance(query, str):
        return []
    cleaned = query.replace('"', " ").replace("\x00", " ")
    seen: list[str] = []
    for term in cleaned.split():
        if term not in seen:
            seen.append(term)
    return seen[:16]


def hit_line(line: int, body: str, terms: list[str]) -> int:
    """The line of the first of ``terms`` in a chunk of ``body`` that starts on ``line``."""
    folded = body.casefold()
    found = [p for p in (folded.find(t.casefold()) for t in terms) if p >= 0]
    return line + folded[: min(found)].count("\n") if found else line


def snippet(body: str, terms: list[str], width: int = 160) -> str:
    """About ``width`` characters of ``body`` on one line, around the first word found."""
    flat = " ".join(body.split())
    folded = flat.casefold()
    positions = [folded.find(t.casefold()) for t in terms]
    found = [p for p in positions if p >= 0]
    at = min(found) if found else 0
    start = max(0, at - width // 3)
    end = min(len(flat), start + width)
    text = flat[start:end]
    return ("…" if start > 0 else "") + text + ("…" if end < len(flat) else "")
