"""The file store is today's files: what it writes is what the archive, the offload and the
memory files write, and what they wrote it reads, keys and locks included."""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from pathlib import Path

import filelock
import pytest

from copaw_context.core.archive.store import DialogArchive
from copaw_context.core.memory.files import MemoryFiles
from copaw_context.core.store.files import FileStore
from copaw_context.core.store.protocol import StoreError, StreamRecord, VersionConflictError
from copaw_context.core.toolresults.offload import OffloadStore
from copaw_context.core.workspace.locked_io import file_lock

DAY = "dialog/2026-05-01.jsonl"


def archive(workspace: Path) -> DialogArchive:
    return DialogArchive(
        workspace / "dialog", session_id="s1", agent_name="assistant", workspace=workspace
    )


async def test_the_store_reads_the_archive_and_appends_after_it_exactly_once(
    tmp_path: Path,
) -> None:
    message = {"role": "user", "content": "hello 世界"}
    await archive(tmp_path).append([message], ["2026-05-01T10:00:00"], ["msg-1"])
    before = (tmp_path / DAY).read_bytes()
    store = FileStore(tmp_path)
    (entry,) = await store.read(DAY)
    assert (entry.key, entry.data + b"\n") == ("s1/msg-1", before)
    again = StreamRecord(DAY, "s1/msg-1", entry.data)
    assert (await store.append([again])).skipped_keys == ("s1/msg-1",)
    new = json.dumps({"session_id": "s1", "archive_id": "msg-2", "message": message}).encode()
    assert (await store.append([StreamRecord(DAY, "s1/msg-2", new)])).appended == 1
    assert (tmp_path / DAY).read_bytes() == before + new + b"\n"
    # ...and the archive sees the store's line as its own: no second copy.
    await archive(tmp_path).append([message], ["2026-05-01T11:00:00"], ["msg-2"])
    assert (tmp_path / DAY).read_bytes() == before + new + b"\n"
    assert sorted(os.listdir(tmp_path / "dialog")) == ["2026-05-01.jsonl", "2026-05-01.jsonl.lock"]


async def test_a_key_must_be_the_one_its_line_names(tmp_path: Path) -> None:
    line = json.dumps({"session_id": "s1", "archive_id": "a"}).encode()
    with pytest.raises(StoreError, match="its line names"):
        await FileStore(tmp_path).append([StreamRecord(DAY, "s1/b", line)])
    with pytest.raises(StoreError, match="JSONL"):
        await FileStore(tmp_path).append([StreamRecord("memory/x.md", None, b"- note")])
    with pytest.raises(StoreError, match="not JSON"):
        await FileStore(tmp_path).append([StreamRecord(DAY, None, b"- note")])


async def test_a_blob_is_the_offload_stores_file_byte_for_byte(tmp_path: Path) -> None:
    parts = ["first\r\n", "中文 😀", "last line without newline"]
    saved = await OffloadStore(tmp_path / "tool_result", 3, workspace=tmp_path).save_parts(parts)
    info = await FileStore(tmp_path).put_blob("tool_result", parts)
    written = tmp_path / info.key
    assert written.parent == saved.path.parent
    assert written.read_bytes() == saved.path.read_bytes()
    assert (info.lines, info.nbytes) == (saved.lines, saved.nbytes)
    # The store reads the offload's files as its own blobs.
    key = f"tool_result/{saved.path.name}"
    assert (await FileStore(tmp_path).read_lines(key)).data == saved.path.read_bytes()


async def test_expiry_keeps_what_a_sessions_manifest_names(tmp_path: Path) -> None:
    clock_now = [1_000_000.0]
    offload = OffloadStore(
        tmp_path / "tool_result", 1, workspace=tmp_path, clock=lambda: clock_now[0]
    )
    named = await offload.save("named by another session's context")
    loose = await offload.save("named by nobody")
    await offload.record_references(uuid.uuid4().hex, [named.name])
    await offload.settle()
    for path in (named, loose):
        os.utime(path, (1.0, 1.0))  # both very old
    store = FileStore(tmp_path, clock=lambda: clock_now[0])
    assert await store.expire_blobs("tool_result", 86400) == [f"tool_result/{loose.name}"]
    assert named.exists()


async def test_memory_md_is_a_document_under_its_writers_lock(tmp_path: Path) -> None:
    memory = MemoryFiles(tmp_path)
    await memory.write_memory("# Memory\n\n## Facts\n- one\n")
    store = FileStore(tmp_path)
    doc = await store.get_document("MEMORY.md")
    assert doc.data == (tmp_path / "MEMORY.md").read_bytes()
    # While MemoryFiles' writer holds the lock, the store's put waits for it.
    lock = memory.memory_lock()
    lock.acquire()
    put = asyncio.ensure_future(store.put_document("MEMORY.md", b"# New\n", doc.version))
    await asyncio.sleep(0.3)
    assert not put.done()
    lock.release()
    assert (await put).data == b"# New\n"
    assert await memory.read_memory() == "# New\n"
    await memory.edit_section("Facts", "- two")  # an old writer's change: a new version
    with pytest.raises(VersionConflictError):
        await store.put_document("MEMORY.md", b"lost update", (await put).version)
    assert (tmp_path / "memory" / ".locks" / "MEMORY.md.lock").exists()


async def test_a_lease_is_consolidations_lock_file(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    lease = await store.acquire_lease("consolidate", 300)
    assert lease is not None
    other = file_lock(tmp_path / "memory" / ".locks" / "consolidate.lock", 0, tmp_path)
    with pytest.raises(filelock.Timeout):
        other.acquire(timeout=0)
    await store.close()  # the store's leases end with it
    other.acquire(timeout=0)
    other.release()
