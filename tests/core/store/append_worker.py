"""A separate OS process appending to one shared store (the cross-process test runs three):
``python -m tests.core.store.append_worker KIND DSN FOLDER WORKSPACE_ID WORKER``."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from copaw_context.core.store.files import FileStore
from copaw_context.core.store.postgres import PostgresStore
from copaw_context.core.store.protocol import StreamRecord, WorkspaceStore

__all__ = ["STREAM", "main", "record"]

STREAM = "dialog/2026-05-01.jsonl"


def record(session: str, archive_id: str) -> StreamRecord:
    """The archive-shaped line of ``session``'s message ``archive_id``."""
    line = {"session_id": session, "archive_id": archive_id, "message": {"content": archive_id}}
    return StreamRecord(STREAM, f"{session}/{archive_id}", json.dumps(line).encode())


async def main(kind: str, dsn: str, folder: str, workspace_id: str, worker: int) -> None:
    store: WorkspaceStore
    if kind == "files":
        store = FileStore(Path(folder), workspace_id)
    else:
        store = PostgresStore(dsn, workspace_id, max_connections=2)
        await store.open()
    try:
        for batch in range(10):
            # Its own messages, and a retry of messages every worker writes too.
            await store.append(
                [
                    record(f"w{worker}", str(batch)),
                    record("shared", str(batch)),
                    record("shared", str(batch - 1)),
                ]
            )
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5], int(sys.argv[5])))
