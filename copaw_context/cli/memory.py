"""``copaw-context memory consolidate`` and ``copaw-context memory search``.

Exit status: 0 on success (a search without results included), 1 when the memory files or the
index could not be used, 2 for bad usage or a bad agent.json.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import filelock

from copaw_context.cli._workspace import workspace_config, workspace_error
from copaw_context.core.config.running import RunningConfig
from copaw_context.core.context.step_context import StepContext
from copaw_context.core.errors import CopawContextError
from copaw_context.core.memory import ConsolidationResult, MemoryIndex, SearchHit, format_hits
from copaw_context.core.memory.tools import MAX_SEARCH_RESULTS

__all__ = ["add_memory"]

if TYPE_CHECKING:  # argparse has no public name for this type
    _Subcommands = argparse._SubParsersAction[argparse.ArgumentParser]

_RUNTIME_ERRORS = (CopawContextError, OSError, filelock.Timeout, sqlite3.Error)


def _failed(what: str, error: BaseException, workspace: Path) -> str:
    """``what failed: error``, with the fix when the workspace cannot be written (the recall
    index and its lock live in it, so even a search writes there)."""
    text = f"{what} failed: {error}"
    causes = [error, error.__cause__, error.__context__]
    storage = any(isinstance(c, (PermissionError, sqlite3.Error)) for c in causes)
    if storage or "unable to open database file" in str(error) or not os.access(workspace, os.W_OK):
        text += (
            f"; the workspace {workspace} must be writable (the index memory/.index.sqlite3 "
            "and its lock are kept there)"
        )
    return text


def add_memory(subcommands: _Subcommands) -> None:
    """Register ``memory`` and its two subcommands."""
    parser = subcommands.add_parser(
        "memory",
        help="long-term memory: fold daily logs into MEMORY.md, search what left the context",
        description="Work on a workspace's long-term memory (MEMORY.md, memory/YYYY-MM-DD.md, "
        "the dialog archive) from the shell.",
    )
    actions = parser.add_subparsers(title="actions", metavar="ACTION", required=True)
    consolidate = actions.add_parser(
        "consolidate",
        help="fold the recent daily logs into MEMORY.md now",
        description="Fold what is new in the most recent daily logs (running.memory."
        "consolidate_days of them) into MEMORY.md, as the scheduled consolidation does. The "
        "command line merges extractively (new unique entries appended under a dated section, "
        "no model call); a dated backup of MEMORY.md is kept in memory/backups/.",
    )
    _add_common(consolidate)
    consolidate.set_defaults(handler=_run_consolidate)
    search = actions.add_parser(
        "search",
        help="search what left the context (memory, logs, archive, tool outputs, summaries)",
        description="Full-text search (Chinese too) over MEMORY.md, the daily logs, the "
        "dialog archive, cut tool outputs and cleared summaries, as the agent's memory_search "
        "tool does; prints file and line of each hit. Builds or updates the index "
        "memory/.index.sqlite3 first.",
    )
    search.add_argument(
        "query", metavar="QUERY", nargs="+", help="the words to look for (quotes optional)"
    )
    search.add_argument(
        "--limit",
        type=int,
        help=f"most results to print (1..{MAX_SEARCH_RESULTS}; default: "
        "running.memory.search_max_results, 5)",
    )
    _add_common(search)
    search.set_defaults(handler=_run_search)


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workspace", required=True, metavar="DIR", help="the agent workspace")
    parser.add_argument(
        "--config",
        metavar="agent.json",
        help="the agent.json whose memory settings apply (memory_dir, dialog_path, "
        "search_max_results, ...; default: the workspace's agent.json when it has one)",
    )


def _error(message: str, status: int) -> int:
    print(f"copaw-context: error: {message}", file=sys.stderr)
    return status


def _setup(args: argparse.Namespace) -> tuple[Path, RunningConfig] | int:
    problem = workspace_error(args.workspace, create=False)
    if problem is not None:
        return _error(problem, 2)
    workspace = Path(args.workspace).expanduser().absolute()
    return workspace, workspace_config(workspace, args.config)


def _run_consolidate(args: argparse.Namespace) -> int:
    setup = _setup(args)
    if isinstance(setup, int):
        return setup
    workspace, config = setup
    context = StepContext(config, workspace)  # the memory in its shared store, if any
    consolidator = context.memory.consolidator()

    async def consolidate() -> ConsolidationResult:
        try:
            return await consolidator.consolidate()
        finally:
            await context.close_store()

    try:
        result = asyncio.run(consolidate())
    except _RUNTIME_ERRORS as error:
        return _error(_failed("consolidation", error, workspace), 1)
    folder = config.memory.memory_dir.rstrip("/")
    if not result.folded_days:
        print(f"Nothing new to fold from the daily logs in {workspace / folder}.")
        return 0
    days = ", ".join(result.folded_days)
    entries = f"{result.entries} entr{'y' if result.entries == 1 else 'ies'}"
    if result.written:
        target = consolidator.files.memory_path()
        print(f"Folded {entries} of {days} into {target} (extractive).")
        if result.backup is not None:
            print(f"Backup of the previous MEMORY.md: {result.backup}")
    else:
        print(f"The {entries} of {days} are already in MEMORY.md; nothing changed.")
    return 0


def _run_search(args: argparse.Namespace) -> int:
    setup = _setup(args)
    if isinstance(setup, int):
        return setup
    workspace, config = setup
    limit = config.memory.search_max_results if args.limit is None else args.limit
    if not 1 <= limit <= MAX_SEARCH_RESULTS:
        return _error(f"--limit must be between 1 and {MAX_SEARCH_RESULTS}, got {limit}", 2)
    args.query = " ".join(args.query)
    if not args.query.strip():
        return _error("the query is empty; give one or more words to look for", 2)
    light = config.light_context_config
    index = MemoryIndex(
        workspace,
        config.memory.memory_dir,
        light.dialog_path,
        tool_results_dir=light.tool_result_pruning_config.tool_results_cache,
    )
    context = StepContext(config, workspace)  # the shared store's archive and memory, if any
    index.before_read = context.copy_shared

    async def search() -> list[SearchHit]:
        try:
            return await index.search(args.query, limit, ranked=True)  # as memory_search ranks
        finally:
            await context.close_store()

    try:
        hits = asyncio.run(search())
    except _RUNTIME_ERRORS as error:
        return _error(_failed("search", error, workspace), 1)
    print(format_hits(args.query, hits, read_hint=False))
    if hits:
        print(f"(paths are relative to {workspace})")
    return 0
