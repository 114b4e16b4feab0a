"""``/dump_history`` files in a shared workspace store, so ``/load_history`` finds them on
any worker (issue 20): with a PostgreSQL store a dump inside the workspace is also a
document, keyed by its workspace-relative path under ``.history-dumps/`` (never a key
another feature reads, such as ``MEMORY.md``), put only where no document of that name is;
a dump named that this worker's folder lacks is copied from the store first, never over a
file. Without a store (or for a path the store cannot key) nothing changes: the file is the
dump.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import uuid
from pathlib import Path

from copaw_context.core.context.step_context import StepContext
from copaw_context.core.store.lines import check_key
from copaw_context.core.store.protocol import StoreError, VersionConflictError
from copaw_context.core.workspace.confine_write import confined_dir, replace_at, sync_dir

__all__ = [
    "HISTORY_FORMAT",
    "check_dump_name",
    "dump_key",
    "fetch_dump",
    "is_dump",
    "share_dump",
    "shared_dump_exists",
]

logger = logging.getLogger("copaw_context")

HISTORY_FORMAT = "copaw-context.history/1"
"""``format`` of a dump file."""

_PREFIX = ".history-dumps"
_MARK = f'"format": "{HISTORY_FORMAT}"'.encode()  # how /dump_history's file begins
_HEAD = 4096


def is_dump(data: bytes) -> bool:
    """Whether ``data`` is a file ``/dump_history`` wrote (its ``format``)."""
    try:
        loaded = json.loads(data.decode("utf-8-sig"))
    except (ValueError, RecursionError):
        return False
    return isinstance(loaded, dict) and loaded.get("format") == HISTORY_FORMAT


_PACKAGE_FILES = frozenset({"memory.md", "agent.json", "agents.md"})


def check_dump_name(ctx: StepContext, path: Path) -> str | None:
    """Why ``path`` (resolved, inside the workspace) may not be a dump: a file the package
    or its host reads (MEMORY.md, agent.json, AGENTS.md) or a name in the memory, tool
    result or request folders, or a day file of the archive; ``None`` when it may. Names
    are compared without case (``Memory/x.json``, ``2025-01-01.JSONL``: the same file on a
    case-insensitive disk)."""
    settings = ctx.settings
    root = ctx.workspace.resolve()
    folders = (settings.memory_dir, settings.tool_results_cache, f"{settings.dialog_path}/requests")
    if path.name.lower() in _PACKAGE_FILES:
        return f"{ctx.relative(path)} is a file the agent itself reads"
    for folder in folders:
        if _within(path, (root / folder).resolve()):
            return f"{ctx.relative(path)} is inside {folder}/, which the package keeps"
    dialog = (root / settings.dialog_path).resolve()
    if path.suffix.lower() == ".jsonl" and _folded(path.parent) == _folded(dialog):
        return f"{ctx.relative(path)} is a day file of the dialog archive"
    return None


def _folded(path: Path) -> list[str]:
    return [part.casefold() for part in path.parts]


def _within(path: Path, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or inside it, names compared without case."""
    inside = _folded(folder)
    return _folded(path)[: len(inside)] == inside


def dump_key(ctx: StepContext, path: Path) -> str | None:
    """The store key of the dump file ``path`` (``None``: no shared store, or outside the
    workspace, or a name the store cannot key)."""
    if ctx.blobs is None:
        return None
    try:
        relative = path.resolve().relative_to(ctx.workspace.resolve())
        return check_key(f"{_PREFIX}/{relative.as_posix()}")
    except (ValueError, OSError, RuntimeError, StoreError):
        return None


async def shared_dump_exists(ctx: StepContext, path: Path) -> bool:
    """Whether another worker put a dump of that name in the store (``False`` when the
    store cannot say: the put after the write catches a clash then)."""
    key = await asyncio.to_thread(dump_key, ctx, path)
    store = await ctx.blobs.store() if key is not None and ctx.blobs is not None else None
    if store is None or key is None:
        return False
    try:
        return (await store.get_document(key)).data is not None
    except StoreError:
        return False


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()).rstrip(".")


async def share_dump(ctx: StepContext, path: Path) -> str:
    """Put the dump written at ``path`` (inside the workspace) in the store; what the reply
    adds ("" when it is shared, or when there is no shared store)."""
    if ctx.blobs is None:
        return ""
    key = await asyncio.to_thread(dump_key, ctx, path)
    elsewhere = " Only this worker's folder has it: another worker's /load_history will not find it"
    if key is None:  # a space, a letter outside ASCII, a part over 200 characters
        return (
            f"{elsewhere} (the workspace store keys only names of ASCII letters, digits, '.', "
            "'_' and '-', up to 200 characters a folder; dump again under such a name to "
            "share it)."
        )
    store = await ctx.blobs.store()
    if store is None:
        return f"{elsewhere} (the workspace store is unavailable: {ctx.blobs.failure})."
    try:
        data = await asyncio.to_thread(path.read_bytes)
        await store.put_document(key, data, "")
    except VersionConflictError:
        return (
            " Only this worker's folder has it: another worker's dump of that name reached the "
            "workspace store first, and other workers' /load_history loads that one; dump "
            "again under another name to share this one."
        )
    except (StoreError, OSError) as error:
        logger.warning("copaw-context: cannot share the dump %s: %s", key, error)
        return f"{elsewhere} ({_one_line(error)})."
    return ""


async def fetch_dump(ctx: StepContext, argument: str, max_bytes: int) -> str:
    """Copy the store's dump that ``/load_history argument`` names into this worker's folder
    when the file is not here and the document is a dump (no other document is written into
    the folder, nothing over a file); "" then, or when there is none, or no shared store
    (a failure is logged, and the load says the file does not exist). A dump of that name
    over ``max_bytes`` or not UTF-8 JSON is not copied: the text says why."""
    if ctx.blobs is None:
        return ""
    path, key = await asyncio.to_thread(_missing_dump, ctx, argument)
    store = await ctx.blobs.store() if key is not None else None
    if store is None or path is None or key is None:
        return ""
    try:
        data = (await store.get_document(key)).data
        if data is None:
            return ""
        if len(data) > max_bytes or not is_dump(data):
            if _MARK not in data[:_HEAD]:  # not a dump: it stays out of the folder, unsaid
                return ""
            if len(data) > max_bytes:
                return f"the workspace store's dump {key} is over the {max_bytes}-byte limit"
            return f"the workspace store's dump {key} is not UTF-8 JSON"
        await asyncio.to_thread(_create, path, data, ctx.workspace)
    except (StoreError, OSError) as error:
        logger.warning("copaw-context: cannot copy the dump %s from the store: %s", key, error)
    return ""


def _create(path: Path, data: bytes, workspace: Path) -> None:
    """Write ``data`` as the new file ``path`` (its folder reached from the workspace root
    without following a link); a file of that name that came meanwhile is kept."""
    temp = f".dump-{uuid.uuid4().hex}.tmp"
    with confined_dir(path.parent, workspace) as dir_fd:
        try:
            replace_at(dir_fd, temp, temp + "~", lambda h: h.write(data), keep_mode=False)
            with contextlib.suppress(FileExistsError):
                os.link(temp, path.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            sync_dir(dir_fd)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=dir_fd)


def _missing_dump(ctx: StepContext, argument: str) -> tuple[Path | None, str | None]:
    """(the path, its key) of a dump this folder lacks; ``(None, None)`` when it is here or
    cannot be a shared dump (a name no path can have, a link, a folder). The path is the
    resolved one: ``a/../x.json`` is ``x.json`` (never a folder ``a`` made on the way)."""
    try:
        named = Path(argument).expanduser()
        path = named if named.is_absolute() else ctx.workspace / named
        resolved = path.resolve()
        if os.path.lexists(path) or os.path.lexists(resolved):
            return None, None
        if check_dump_name(ctx, resolved) is not None:
            return None, None
        key = dump_key(ctx, resolved)
    except (ValueError, OSError, RuntimeError):
        return None, None
    return (resolved, key) if key is not None else (None, None)
