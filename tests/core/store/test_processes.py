"""Three OS processes appending to one store at once: every key once, on both stores (the
files of one folder; one database, one workspace id)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from copaw_context.core.store.files import FileStore
from copaw_context.core.store.postgres import PostgresStore
from copaw_context.core.store.protocol import StoreError, StreamRecord, WorkspaceStore
from copaw_context.testing import ManualClock
from tests.core.store.append_worker import STREAM
from tests.core.store.kit import KINDS, make_store, opened

ROOT = Path(__file__).resolve().parents[3]


async def read_keys(store: WorkspaceStore) -> list[str | None]:
    try:
        return [entry.key for entry in await store.read(STREAM)]
    finally:
        await store.close()


@pytest.mark.parametrize("kind", KINDS)
def test_three_processes_lose_and_repeat_nothing(kind: str, pg_dsn: str, tmp_path: Path) -> None:
    workspace_id = f"agent-{uuid.uuid4().hex}"
    folder = tmp_path / "ws"
    folder.mkdir()
    command = [sys.executable, "-m", "tests.core.store.append_worker", kind, pg_dsn]
    workers = [
        subprocess.Popen([*command, str(folder), workspace_id, str(worker)], cwd=ROOT)
        for worker in range(3)
    ]
    assert [worker.wait(timeout=120) for worker in workers] == [0, 0, 0]
    store: WorkspaceStore = (
        FileStore(folder) if kind == "files" else PostgresStore(pg_dsn, workspace_id)
    )
    keys = asyncio.run(opened_then(store))
    want = {f"w{w}/{b}" for w in range(3) for b in range(10)}
    want |= {f"shared/{b}" for b in range(-1, 10)}
    assert len(keys) == len(want) and set(keys) == want


async def opened_then(store: WorkspaceStore) -> list[str | None]:
    return await read_keys(await opened(store))


async def test_a_stream_that_cannot_be_opened_stops_the_whole_append(tmp_path: Path) -> None:
    store = await opened(make_store("files", "", tmp_path, ManualClock(time.time())))
    (tmp_path / "blocked").write_text("a file where a folder would be")
    records = [
        StreamRecord("dialog/2026-05-01.jsonl", None, b'{"n": 1}'),
        StreamRecord("blocked/2026-05-01.jsonl", None, b'{"n": 2}'),
    ]
    with pytest.raises(StoreError, match="nothing was written"):
        await store.append(records)
    assert await store.read("dialog/2026-05-01.jsonl") == []
