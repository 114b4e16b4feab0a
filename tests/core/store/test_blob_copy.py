"""``read_file``'s copy of a PostgreSQL blob (``StoreBlobs.fetch``) goes by line ranges into
a temp file renamed at the end: a multi-MB blob is copied byte for byte without ever being
whole in memory, and a read failing halfway leaves no file behind."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from copaw_context.core.config.running import RunningConfig
from copaw_context.core.store.postgres import PostgresStore
from copaw_context.core.store.protocol import BlobLines, StoreError, WorkspaceStore
from copaw_context.core.store.select import STORE_ENV
from copaw_context.core.toolresults.store_blobs import COPY_BYTES, StoreBlobs

_LINES = [f"row {i}: {'数据' * (i % 7)} value={i * 7:>12}" + "x" * (i % 90) for i in range(80_000)]


async def _saved(pg_dsn: str, agent: str) -> tuple[str, bytes]:
    store = PostgresStore(pg_dsn, agent)
    await store.open()
    try:
        info = await store.put_blob("tool_result", _LINES)
        return info.key, (await store.read_lines(info.key)).data
    finally:
        await store.close()


def _workspace(tmp_path: Path, agent: str) -> Path:
    (tmp_path / "agent.json").write_text(json.dumps({"id": agent}), encoding="utf-8")
    return tmp_path


async def test_a_multi_megabyte_blob_is_copied_in_bounded_reads(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(STORE_ENV, pg_dsn)
    key, data = await _saved(pg_dsn, "agent-big-copy")
    assert len(data) > 6 * COPY_BYTES
    blobs = StoreBlobs(RunningConfig(), _workspace(tmp_path, "agent-big-copy"))
    assert await blobs.store() is not None
    tracemalloc.start()
    try:
        assert await blobs.fetch(key, tmp_path / key) is None
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        await blobs.close()
    assert (tmp_path / key).read_bytes() == data
    assert peak < len(data) / 2  # a whole copy would be all of it at once
    assert [p.name for p in (tmp_path / "tool_result").iterdir()] == [key.rpartition("/")[2]]


async def test_a_read_failing_halfway_leaves_no_file(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(STORE_ENV, pg_dsn)
    key, _ = await _saved(pg_dsn, "agent-copy-fails")
    blobs = StoreBlobs(RunningConfig(), _workspace(tmp_path, "agent-copy-fails"))
    store = await blobs.store()
    assert store is not None
    reads: list[int] = []
    read_lines = store.read_lines

    async def failing(key: str, first: int = 1, last: int | None = None) -> BlobLines:
        reads.append(first)
        if len(reads) == 3:
            raise RuntimeError("the connection was lost")
        return await read_lines(key, first, last)

    monkeypatch.setattr(store, "read_lines", failing)
    try:
        why = await blobs.fetch(key, tmp_path / key)
        assert why == f"the workspace store could not read {key} (the connection was lost)"
        monkeypatch.setattr(store, "read_lines", _gone(store))
        why = await blobs.fetch(key, tmp_path / key)
        assert why is not None and "is not a saved result of this workspace" in why
    finally:
        monkeypatch.undo()
        await blobs.close()
    assert len(reads) == 3
    assert list((tmp_path / "tool_result").iterdir()) == []  # no copy, no temp file


def _gone(store: WorkspaceStore) -> object:
    async def gone(key: str, first: int = 1, last: int | None = None) -> BlobLines:
        raise StoreError(f"no blob {key} in the store")  # expired during the copy

    return gone
