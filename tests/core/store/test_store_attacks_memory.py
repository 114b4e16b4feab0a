"""The PostgreSQL store under attack, part two (issue 20): MEMORY.md that is not UTF-8 in the
database, three MemoryService replicas editing, logging and consolidating at once, a
``put_document`` that fails after the local write, ``copaw-context store import|export`` on
hostile folders, and cases ported from peers' store suites (openai-agents' SQLAlchemySession:
sessions isolated on one database, an empty add; LangGraph's PostgresStore: a batch over many
namespaces at once)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

from copaw_context.cli import main
from copaw_context.core.memory import MemoryConsolidator
from copaw_context.core.store.postgres import PostgresStore
from copaw_context.core.store.protocol import StoreError, StreamRecord
from tests.pg_server import pg_dsn
from tests.store_replicas import memory_replica, store_config

__all__ = ["pg_dsn"]

_NOON = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


async def _opened(dsn: str, agent_id: str) -> PostgresStore:
    store = PostgresStore(dsn, agent_id)
    await store.open()
    return store


@pytest.fixture
def agent_id() -> str:
    return f"agent-{uuid.uuid4().hex}"


async def test_a_memory_document_that_is_not_utf8_is_read_and_edited(
    pg_dsn: str, tmp_path: Path, agent_id: str
) -> None:
    store = await _opened(pg_dsn, agent_id)
    try:
        await store.put_document("MEMORY.md", b"## Facts\n- caf\xe9 \xff\xfe\n", "")
        service = memory_replica(store_config(pg_dsn), tmp_path / "ws", agent_id)
        assert "caf\ufffd" in await service.tools.files.read_memory()
        answer = await service.tools.memory_edit("Facts", "- a new fact")
        assert answer.startswith("Added to"), answer
        shared = (await store.get_document("MEMORY.md")).data or b""
        assert b"- a new fact" in shared and shared.decode("utf-8")  # valid UTF-8 now
    finally:
        await store.close()


async def test_three_replicas_edit_log_and_consolidate_at_once(
    pg_dsn: str, tmp_path: Path, agent_id: str
) -> None:
    config = store_config(pg_dsn)
    replicas = [memory_replica(config, tmp_path / n, agent_id) for n in "abc"]
    today = datetime.now().astimezone()
    calls = []
    for i, replica in enumerate(replicas):
        for j in range(4):
            calls.append(replica.tools.memory_edit("Facts", f"- fact {i}.{j}"))
            calls.append(replica.tools.files.append_log(f"- Lesson: note {i}.{j}", when=today))
        calls.append(MemoryConsolidator(replica.tools.files).consolidate())
    results = await asyncio.gather(*calls, return_exceptions=True)
    assert [r for r in results if isinstance(r, BaseException)] == []
    texts = [await r.tools.files.read_memory() for r in replicas]
    assert texts[0] == texts[1] == texts[2]
    for i in range(3):
        for j in range(4):
            assert texts[0].count(f"- fact {i}.{j}") == 1
    logs = [await r.tools.files.read_log(today.date()) for r in replicas]
    assert logs[0] == logs[1] == logs[2]
    assert logs[0].count(f"# {today.date().isoformat()}") == 1
    assert sorted(line[-3:] for line in logs[0].splitlines() if "note" in line) == sorted(
        f"{i}.{j}" for i in range(3) for j in range(4)
    )


async def test_a_put_that_fails_after_the_local_write_restores_memory(
    pg_dsn: str, tmp_path: Path, agent_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = memory_replica(store_config(pg_dsn), tmp_path / "ws", agent_id)
    await service.tools.memory_edit("Facts", "- kept")
    path = service.tools.files.memory_path()
    before = path.read_bytes()
    store = await service.shared.opener.store()  # type: ignore[union-attr]
    assert store is not None

    async def fail(key: str, data: bytes, expected: str) -> object:
        assert path.read_bytes() != before  # the local file was written first
        raise StoreError("the connection was lost")

    monkeypatch.setattr(store, "put_document", fail)
    answer = await service.tools.memory_edit("Facts", "- lost")
    assert answer.startswith("Error:") and "the local MEMORY.md is unchanged" in answer
    assert path.read_bytes() == before
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []
    monkeypatch.undo()
    assert "- lost" not in await service.tools.files.read_memory()


def _cli(dsn: str, action: str, folder: Path, agent_id: str) -> int:
    return main(["store", action, "--dsn", dsn, "--agent-id", agent_id, str(folder)])


async def test_import_refuses_a_dialog_folder_linked_out(
    pg_dsn: str, tmp_path: Path, agent_id: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "2026-05-01.jsonl").write_bytes(b'{"session_id": "s", "archive_id": "1"}\n')
    source = tmp_path / "ws"
    source.mkdir()
    (source / "dialog").symlink_to(outside, target_is_directory=True)
    assert await asyncio.to_thread(_cli, pg_dsn, "import", source, agent_id) == 1
    store = await _opened(pg_dsn, agent_id)
    try:
        assert await store.streams("dialog/") == []
    finally:
        await store.close()


async def test_import_keeps_a_torn_last_line_out_of_the_database(
    pg_dsn: str, tmp_path: Path, agent_id: str
) -> None:
    source = tmp_path / "ws"
    (source / "dialog").mkdir(parents=True)
    whole = b'{"session_id": "s", "archive_id": "1", "message": {"role": "user"}}\n'
    (source / "dialog" / "2026-05-01.jsonl").write_bytes(whole + b'{"session_id": "s", "arch')
    (source / "tool_result").mkdir()
    (source / "tool_result" / "not-a-blob.txt").write_bytes(b"x")
    (source / "tool_result" / ("A" * 32 + ".txt")).write_bytes(b"x")
    assert await asyncio.to_thread(_cli, pg_dsn, "import", source, agent_id) == 0
    store = await _opened(pg_dsn, agent_id)
    try:
        assert [e.data + b"\n" for e in await store.read("dialog/2026-05-01.jsonl")] == [whole]
        assert await store.list_blobs("tool_result") == []
    finally:
        await store.close()


async def test_export_into_a_tool_result_linked_out_writes_nothing(
    pg_dsn: str, tmp_path: Path, agent_id: str
) -> None:
    store = await _opened(pg_dsn, agent_id)
    try:
        await store.append([StreamRecord("dialog/2026-05-01.jsonl", None, b'{"a": 1}')])
        await store.put_blob("tool_result", ["saved"])
    finally:
        await store.close()
    outside = tmp_path / "outside"
    outside.mkdir()
    target = tmp_path / "target"
    target.mkdir()
    (target / "tool_result").symlink_to(outside, target_is_directory=True)
    assert await asyncio.to_thread(_cli, pg_dsn, "export", target, agent_id) == 1
    assert list(outside.iterdir()) == []
    assert sorted(p.name for p in target.iterdir()) == ["tool_result"]  # no dialog/ either


# ---------------------------------------------------------------------- ported from peers
async def test_workspaces_on_one_database_are_isolated(pg_dsn: str) -> None:
    """openai-agents' ``test_session_isolation``: two sessions, one table, no crosstalk."""
    one = await _opened(pg_dsn, f"agent-{uuid.uuid4().hex}")
    two = await _opened(pg_dsn, f"agent-{uuid.uuid4().hex}")
    try:
        await one.append([StreamRecord("dialog/d.jsonl", "k", b"one's")])
        await two.append([StreamRecord("dialog/d.jsonl", "k", b"two's")])  # same key: no clash
        await one.put_document("MEMORY.md", b"one", "")
        assert [e.data for e in await two.read("dialog/d.jsonl")] == [b"two's"]
        assert (await two.get_document("MEMORY.md")).data is None
        assert await two.search("one", "dialog/") == []
    finally:
        await one.close()
        await two.close()


async def test_an_empty_append_and_a_batch_over_many_streams(pg_dsn: str, agent_id: str) -> None:
    """openai-agents' ``test_add_empty_items_list`` and LangGraph's batch over many
    namespaces: nothing for nothing; one call over 200 streams lands whole, in order."""
    store = await _opened(pg_dsn, agent_id)
    try:
        assert (await store.append([])).appended == 0
        records = [StreamRecord(f"dialog/s{i % 200}.jsonl", f"k{i}", b"%d" % i) for i in range(600)]
        assert (await store.append(records)).appended == 600
        lengths = await store.stream_lengths("dialog/")
        assert len(lengths) == 200 and set(lengths.values()) == {3}
        assert [e.data for e in await store.read("dialog/s7.jsonl")] == [b"7", b"207", b"407"]
    finally:
        await store.close()
