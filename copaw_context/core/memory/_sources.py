"""What the recall index reads: the files of each kind, and the text of one of them.

Private to :mod:`copaw_context.core.memory`. The kinds:

- ``memory``: MEMORY.md (or the legacy Memory.md);
- ``log``: the daily logs, ``<memory_dir>/*.md``;
- ``dialog``: the dialog archive, ``<dialog_dir>/*.jsonl`` (appended; read on from where the
  last run stopped);
- ``summary``: the summaries that ``/clear`` and ``/new`` removed,
  ``<dialog_dir>/summaries/*.md`` (:mod:`.cleared`);
- ``output``: the full texts of cut tool outputs, ``<tool_results_cache>/<32 hex>.txt``;
- ``request``: the full texts of cut user requests, ``<dialog_dir>/requests/<32 hex>.txt``.

``output`` and ``request`` files are written once and never appended (:mod:`..offload`): only
their first ``max_bytes`` are indexed, a change of size or inode indexes them again (a cleanup
touching one that is still named does not), and a link or a file with several hard links is
never read.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, Literal

from copaw_context.core.memory._extract import Chunk, markdown_chunks, summary_chunks, text_chunks
from copaw_context.core.memory.cleared import CLEARED_DIR
from copaw_context.core.memory.files import LEGACY_MEMORY_FILE, MEMORY_FILE

__all__ = [
    "KIND_WORDS",
    "WHOLE_KINDS",
    "Kind",
    "Source",
    "find_sources",
    "text_of",
]

Kind = Literal["memory", "log", "dialog", "summary", "output", "request"]
Source = tuple[Path, Kind]

WHOLE_KINDS: frozenset[str] = frozenset({"output", "request"})
"""Kinds written once: indexed up to a byte cap, never read on from an offset."""

KIND_WORDS: dict[str, str] = {
    "memory": "long-term memory",
    "log": "daily memory log",
    "dialog": "an archived message (its JSON line)",
    "summary": "a summary that /clear or /new removed",
    "output": "the full text of a cut tool output",
    "request": "the full text of a cut user request",
}
"""Where a hit comes from, in words (see ``format_hits``)."""

_OWN_FILE = re.compile(r"[0-9a-f]{32}\.txt")


def find_sources(
    workspace: Path,
    memory_dir: Path,
    dialog_dir: Path,
    output_dir: Path | None,
    readable: Callable[[Path], bool],
) -> dict[str, Source]:
    """Every file to index, by its path relative to the workspace; ``readable`` says
    whether a path (links resolved) may be read."""
    found: dict[str, Source] = {}
    for name in (MEMORY_FILE, LEGACY_MEMORY_FILE):
        path = workspace / name
        if path.is_file() and not any(p.samefile(path) for p, _ in found.values()):
            found[name] = (path, "memory")
    folders: list[tuple[Path, str, Kind]] = [
        (memory_dir, ".md", "log"),
        (dialog_dir, ".jsonl", "dialog"),
        (dialog_dir / CLEARED_DIR, ".md", "summary"),
    ]
    checked: set[str] = set()  # in a folder that is inside, and no link: inside too
    for directory, suffix, kind in folders:
        if not directory.is_dir():
            continue
        inside = readable(directory)
        with os.scandir(directory) as entries:
            listed = sorted((e for e in entries if e.name.endswith(suffix)), key=lambda e: e.name)
        for entry in listed:
            path = directory / entry.name
            if entry.is_file():
                rel = path.relative_to(workspace).as_posix()
                found[rel] = (path, kind)
                if inside and not entry.is_symlink():
                    checked.add(rel)
    saved: list[tuple[Path | None, Kind]] = [
        (output_dir, "output"),
        (dialog_dir / "requests", "request"),
    ]
    for folder, kind in saved:
        if folder is None or not folder.is_dir() or folder.is_symlink():
            continue
        with os.scandir(folder) as entries:
            for entry in entries:
                # Only the names the store writes; never through a link.
                if _OWN_FILE.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
                    path = folder / entry.name
                    found[path.relative_to(workspace).as_posix()] = (path, kind)
    return {rel: source for rel, source in found.items() if rel in checked or readable(source[0])}


def text_of(
    handle: BinaryIO, kind: Kind, max_chunk_chars: int, max_bytes: int
) -> tuple[list[Chunk], bytes, int] | None:
    """(chunks, the bytes read, their lines) of a whole file read from the handle's position:
    a saved output or request up to ``max_bytes`` (cut at its last line end), a Markdown file
    whole. None for a saved file with several hard links (it may be a file from elsewhere)."""
    if kind in WHOLE_KINDS:
        if os.fstat(handle.fileno()).st_nlink > 1:
            return None
        data = handle.read(max_bytes + 1)
        if len(data) > max_bytes:
            data = data[:max_bytes]
            end = data.rfind(b"\n")
            data = data[: end + 1] if end > 0 else data
        text = data.decode("utf-8", "replace")
        return text_chunks(text, 1, max_chunk_chars), data, data.count(b"\n")
    data = handle.read()
    text = data.decode("utf-8", "replace")
    if kind == "summary":
        chunks = summary_chunks(text, max_chunk_chars)
    else:
        chunks = markdown_chunks(text, 1, max_chunk_chars)
    return chunks, data, data.count(b"\n")
