"""``/dump_history`` files in a shared workspace store, so ``/load_history`` finds them on
any worker (issue 20): with a PostgreSQL store a dump inside the workspace is also a
document under its workspace-relative path, put only where no document of that name is;
a dump named that this worker's folder lacks is copied from the store first. Without a store
(or for a path the store cannot key) nothing changes: the file is the dump.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

from copaw_context.core.context.step_context import StepContext
from copaw_context.core.store.lines import check_key
from copaw_context.core.store.protocol import StoreError, VersionConflictError
from copaw_context.core.workspace.locked_io import atomic_write

__all__ = ["dump_key", "fetch_dump", "share_dump", "shared_dump_exists"]

logger = logging.getLogger("copaw_context")


def dump_key(ctx: StepContext, path: Path) -> str | None:
    """The store key of the dump file ``path`` (``None``: no shared store, or outside the
    workspace)."""
    if ctx.blobs is None:
        return None
    try:
        relative = path.resolve().relative_to(ctx.workspace.resolve())
        return check_key(relative.as_posix())
    except (ValueError, OSError, StoreError):
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


async def share_dump(ctx: StepContext, path: Path) -> str:
    """Put the dump written at ``path`` in the store; what the reply adds ("" when it is
    shared, or when there is no shared store)."""
    key = await asyncio.to_thread(dump_key, ctx, path)
    if key is None or ctx.blobs is None:
        return ""
    elsewhere = " Only this worker's folder has it: another worker's /load_history will not find it"
    store = await ctx.blobs.store()
    if store is None:
        return f"{elsewhere} (the workspace store is unavailable: {ctx.blobs.failure})."
    try:
        data = await asyncio.to_thread(path.read_bytes)
        await store.put_document(key, data, "")
    except VersionConflictError:
        return f"{elsewhere} (another worker's dump has that name in the workspace store)."
    except (StoreError, OSError) as error:
        logger.warning("copaw-context: cannot share the dump %s: %s", key, error)
        return f"{elsewhere} ({error})."
    return ""


async def fetch_dump(ctx: StepContext, argument: str, is_dump: Callable[[bytes], bool]) -> None:
    """Copy the store's dump that ``/load_history argument`` names into this worker's folder
    when the file is not here and the document ``is_dump`` (no other document is written
    into the folder); nothing when there is none, or no shared store; a failure is logged and
    the load then says the file does not exist."""
    if ctx.blobs is None:
        return
    path, key = await asyncio.to_thread(_missing_dump, ctx, argument)
    store = await ctx.blobs.store() if key is not None else None
    if store is None or path is None or key is None:
        return
    try:
        doc = await store.get_document(key)
        if doc.data is not None and is_dump(doc.data):
            await asyncio.to_thread(atomic_write, path, doc.data, ctx.workspace)
    except (StoreError, OSError) as error:
        logger.warning("copaw-context: cannot copy the dump %s from the store: %s", key, error)


def _missing_dump(ctx: StepContext, argument: str) -> tuple[Path | None, str | None]:
    """(the path, its key) of a dump this folder lacks; ``(None, None)`` when it is here or
    cannot be a shared dump."""
    named = Path(argument).expanduser()
    path = named if named.is_absolute() else ctx.workspace / named
    if path.exists() or path.is_symlink():
        return None, None
    key = dump_key(ctx, path)
    return (path, key) if key is not None else (None, None)
