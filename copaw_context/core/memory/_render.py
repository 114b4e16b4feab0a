"""How the memory summariser shows removed messages to its model, and reads its reply."""

from __future__ import annotations

import re

from copaw_context.core.memory.instructions import SILENT
from copaw_context.core.memory.markdown import normalise_text
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart

__all__ = [
    "MAX_ENTRIES",
    "MAX_ENTRY_CHARS",
    "clip",
    "parse_memory_entries",
    "render_message",
    "render_transcript",
]

MAX_ENTRIES = 20
MAX_ENTRY_CHARS = 600
_PART_LIMITS = {"text": 4000, "tool_call": 1000, "tool_result": 1500, "hint": 1000}
_BULLET = re.compile(r"^\s{0,3}(?:[-*+]|\d{1,3}[.)])[ \t]+")
_ERROR_RESULT_CHARS = 3000  # failures are where the lessons are


def clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else f"{text[:limit]} [... {len(text) - limit} chars cut]"


def _render_part(part: TranscriptPart) -> str | None:
    if part.kind in ("text", "hint"):
        return clip(part.text, _PART_LIMITS[part.kind]) or None
    if part.kind == "tool_call":
        return f"  -> call {part.tool_name or '?'}: {clip(part.text, _PART_LIMITS['tool_call'])}"
    if part.kind == "tool_result":
        limit = _ERROR_RESULT_CHARS if part.is_error else _PART_LIMITS["tool_result"]
        status = " (error)" if part.is_error else ""
        return f"  <- {part.tool_name or '?'}{status}: {clip(part.text, limit)}"
    return None  # thinking and binary data are not memory material


def render_message(message: TranscriptMessage) -> str:
    who = message.role if message.name in ("", message.role) else f"{message.role} {message.name}"
    when = f" {message.timestamp}" if message.timestamp else ""
    body = "\n".join(p for p in map(_render_part, message.parts) if p)
    return f"[{who}{when}]\n{body or '(no text)'}"


def render_transcript(messages: tuple[TranscriptMessage, ...], max_bytes: int = 48000) -> str:
    """The messages as plain text for the summariser, at most about ``max_bytes`` UTF-8 bytes:
    long parts are clipped, and when still too long the middle messages are left out."""
    rendered = [render_message(m) for m in messages]
    sizes = [len(text.encode("utf-8")) + 2 for text in rendered]
    if sum(sizes) <= max_bytes:
        return "\n\n".join(rendered)
    head: list[str] = []
    tail: list[str] = []
    used = 0
    left, right = 0, len(rendered) - 1
    while left <= right:  # alternate: the request that started it, the latest state
        take_left = len(head) <= len(tail)
        index = left if take_left else right
        if used + sizes[index] > max_bytes:
            break
        used += sizes[index]
        if take_left:
            head.append(rendered[index])
            left += 1
        else:
            tail.insert(0, rendered[index])
            right -= 1
    if not head and not tail:  # even one message is too long: the latest, clipped
        last = rendered[-1].encode("utf-8")[: max(0, max_bytes - 64)].decode("utf-8", "ignore")
        tail, right = [last], len(rendered) - 2
    omitted = right - left + 1
    marker = [f"[... {omitted} message(s) omitted ...]"] if omitted > 0 else []
    return "\n\n".join([*head, *marker, *tail])


def parse_memory_entries(reply: str) -> list[str] | None:
    """The entries of a summariser reply; ``None`` when it is ``[SILENT]`` (or empty).

    With bullets, each bullet (and its indented continuation lines) is an entry and other
    lines are ignored; without any, each non-heading line is one.
    """
    lines = [
        line
        for line in normalise_text(reply).strip().split("\n")
        if line.strip() and not line.lstrip().startswith(("```", "~~~", "#"))
    ]
    items: list[list[str]] = []
    for line in lines:
        if _BULLET.match(line):
            items.append([_BULLET.sub("", line, count=1).strip()])
        elif items and line[:1].isspace():
            items[-1].append(line.strip())
    if not items:
        if any(SILENT in line.upper() for line in lines):
            return None
        items = [[line.strip()] for line in lines]
    entries = [" ".join(item).strip() for item in items]
    kept = [
        clip(entry, MAX_ENTRY_CHARS) for entry in entries if entry and SILENT not in entry.upper()
    ]
    return kept[:MAX_ENTRIES] or None
