"""What the store contract tests share: the two kinds and how each test makes its store."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

from copaw_context.core.store.files import FileStore
from copaw_context.core.store.postgres import PostgresStore
from copaw_context.core.store.protocol import WorkspaceStore

__all__ = ["KINDS", "make_store", "opened"]

KINDS = ("files", "postgres")


def make_store(kind: str, dsn: str, folder: Path, clock: Callable[[], float]) -> WorkspaceStore:
    """A store of ``kind``: files in ``folder``, or a fresh workspace id in the database.

    ``clock`` starts at the wall time (``ManualClock(time.time())``): the file store's blob
    stamps are the files' modification times."""
    if kind == "files":
        folder.mkdir(parents=True, exist_ok=True)
        return FileStore(folder, "agent-files", clock=clock)
    return PostgresStore(dsn, f"agent-{uuid.uuid4().hex}", clock=clock, max_connections=4)


async def opened(store: WorkspaceStore) -> WorkspaceStore:
    """``store``, connected and migrated when it is PostgreSQL's."""
    if isinstance(store, PostgresStore):
        await store.open()
    return store
