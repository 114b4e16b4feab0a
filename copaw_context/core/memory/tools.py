"""The agent's memory tools as plain async functions: text in, text out, never raising for
the agent's mistakes.

Host adapters wrap the bound methods of :class:`MemoryTools` as tools; each docstring is the
tool description the model reads. Errors come back as text starting with ``Error:`` that says
what to change.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import filelock

from copaw_context.core.errors import CopawContextError
from copaw_context.core.memory._sources import KIND_WORDS
from copaw_context.core.memory.files import MemoryFiles
from copaw_context.core.memory.search import MAX_OUTPUT_BYTES, MemoryIndex, SearchHit

__all__ = ["MAX_SEARCH_RESULTS", "MemoryTools", "format_hits"]

logger = logging.getLogger("copaw_context")

MAX_SEARCH_RESULTS = 50
_TOOL_ERRORS = (CopawContextError, OSError, ValueError, filelock.Timeout, sqlite3.Error)


def format_hits(query: str, hits: list[SearchHit], *, read_hint: bool = True) -> str:
    """Search results as the agent reads them: file, line, who/when, snippet, and (with
    ``read_hint``) under each hit where it comes from and the ``read_file`` call that reads
    the whole from its first line."""
    if not hits:
        return (
            f"No memory matches {query!r}. Try other or fewer words (at least 3 characters "
            "match fastest; Chinese works without spaces)."
        )
    lines = [f"{len(hits)} result(s) for {query!r}, best first:"]
    for number, hit in enumerate(hits, start=1):
        about = ", ".join(part for part in (hit.label, hit.stamp) if part)
        where = f"{hit.path} line {hit.line}" + (f" ({about})" if about else "")
        lines.append(f"{number}. {where}: {hit.snippet}")
        if read_hint:
            source = KIND_WORDS.get(hit.kind, hit.kind)
            path = json.dumps(hit.path, ensure_ascii=False)
            session = f"; session {hit.session}" if hit.session else ""
            lines.append(
                f"   from {source}; read_file(file_path={path}, start_line={hit.line}){session}"
            )
    if read_hint:
        lines.append("Paths are relative to the workspace.")
    return "\n".join(lines)


def _error(action: str, error: BaseException) -> str:
    if isinstance(error, filelock.Timeout):
        return f"Error: could not {action}: another process holds the memory file; try again."
    if isinstance(error, CopawContextError | ValueError):
        return f"Error: could not {action}: {error}"
    logger.warning("memory tool: could not %s: %s: %s", action, type(error).__name__, error)
    return f"Error: could not {action}: {type(error).__name__}: {error}"


class MemoryTools:
    """``memory_append_log``, ``memory_edit`` and ``memory_search`` for one workspace."""

    def __init__(self, files: MemoryFiles, index: MemoryIndex, *, max_results: int = 5) -> None:
        self._files = files
        self._index = index
        self._max_results = max(1, min(max_results, MAX_SEARCH_RESULTS))

    @property
    def index(self) -> MemoryIndex:
        """The recall index behind ``memory_search``."""
        return self._index

    @property
    def files(self) -> MemoryFiles:
        """The memory files the tools write."""
        return self._files

    @classmethod
    def for_workspace(
        cls,
        workspace: str | Path,
        memory_dir: str = "memory",
        dialog_dir: str = "dialog",
        *,
        max_results: int = 5,
        extra_read_roots: Sequence[str | Path] = (),
        tool_results_dir: str | None = "tool_result",
        max_output_bytes: int = MAX_OUTPUT_BYTES,
    ) -> MemoryTools:
        """Tools over ``workspace`` with a new :class:`MemoryFiles` and :class:`MemoryIndex`;
        ``extra_read_roots`` may be read through links, never written; the index reads the
        first ``max_output_bytes`` of each saved tool output in ``tool_results_dir``."""
        files = MemoryFiles(workspace, memory_dir, extra_read_roots=extra_read_roots)
        index = MemoryIndex(
            workspace,
            memory_dir,
            dialog_dir,
            extra_read_roots=extra_read_roots,
            tool_results_dir=tool_results_dir,
            max_output_bytes=max_output_bytes,
        )
        return cls(files, index, max_results=max_results)

    def functions(self) -> list[Callable[..., Awaitable[str]]]:
        """The tool functions, for an adapter to register."""
        return [self.memory_append_log, self.memory_edit, self.memory_search]

    async def memory_append_log(self, text: str) -> str:
        """Write a note to today's memory log (memory/YYYY-MM-DD.md), e.g. what was done,
        decided or learned. Each bullet ("- ...") becomes one timestamped entry. Lasting facts
        about the user belong in MEMORY.md instead (memory_edit).

        Args:
            text (`str`):
                The note: one line, or several "- " bullets. Keep it short.
        """
        try:
            path = await self._files.append_log(text, source="agent")
        except _TOOL_ERRORS as error:
            return _error("write the log", error)
        return f"Noted in {path.relative_to(self._files.workspace).as_posix()}."

    async def memory_edit(self, section: str, content: str, mode: str = "add") -> str:
        """Record a lasting fact in MEMORY.md (user preferences, habits, project facts, lessons
        learned), under a "## section" heading. MEMORY.md is shown to you at the start of
        every session. A dated backup is kept of every change.

        Args:
            section (`str`):
                The section title, e.g. "Preferences" or "Lessons"; created when missing.
            content (`str`):
                Markdown to add, usually "- " bullets; no "#"/"##" headings.
            mode (`str`):
                "add" appends to the section (default); "replace" replaces the whole section
                body with content (use it to correct or remove outdated facts).
        """
        if mode not in ("add", "replace"):
            return f"Error: mode must be 'add' or 'replace', got {mode!r}."
        try:
            await self._files.edit_section(section, content, "add" if mode == "add" else "replace")
        except _TOOL_ERRORS as error:
            return _error("edit MEMORY.md", error)
        verb = "Added to" if mode == "add" else "Replaced"
        name = self._files.memory_path().name
        return f"{verb} section {section.strip().lstrip('#').strip()!r} of {name}."

    async def memory_search(self, query: str, limit: int = 5) -> str:
        """Search what left your context: MEMORY.md, daily logs, earlier conversation,
        cleared summaries, cut tool outputs. Use it before asking the user something they
        may have told you already, or to find earlier results and decisions.

        Args:
            query (`str`):
                A question or words to look for (any language); best matches first.
            limit (`int`):
                How many results to return (default 5).
        """
        if isinstance(limit, bool) or not isinstance(limit, int):
            return f"Error: limit must be a whole number, got {limit!r}."
        if limit < 1:
            return f"Error: limit must be at least 1, got {limit}."
        if not isinstance(query, str) or not query.strip():
            return "Error: the query is empty; give one or more words to look for."
        try:
            hits = await self._index.search(query, min(limit, self._max_results), ranked=True)
        except _TOOL_ERRORS as error:
            return _error("search memory", error)
        return format_hits(query, hits)
