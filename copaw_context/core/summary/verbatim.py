"""Verbatim items, kept as they are: each once (:func:`unique`), and cut only with a note of
how much was left out (:func:`cut`)."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["cut", "unique"]


def unique(items: Iterable[str]) -> list[str]:
    """The non-empty ``items`` in order, each once."""
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        if item and item not in seen:
            seen.add(item)
            out.append(item)
    return out


def cut(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with a note of how many were omitted."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} … [{len(text) - limit} more characters omitted]"
