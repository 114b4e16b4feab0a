"""The memory files through the workspace's file store (issue 20): MEMORY.md by
compare-and-swap (two writers, no lost update), the legacy ``Memory.md`` under MEMORY.md's
lock, the daily log by ``append_text``, and a memory folder that is no store key (the same
file code, called directly)."""

from __future__ import annotations

import asyncio
import threading
from datetime import datetime
from pathlib import Path

import pytest

from copaw_context.core.memory import MemoryFiles
from copaw_context.core.memory.markdown import normalise_text
from copaw_context.core.store.files import FileStore
from copaw_context.core.workspace.confine import OutsideWorkspaceError
from copaw_context.testing import CountingStore

NOON = datetime(2024, 5, 1, 12, 0).astimezone()


def _files(workspace: Path, store: FileStore | None = None, **options: object) -> MemoryFiles:
    return MemoryFiles(workspace, clock=lambda: NOON, files=store, **options)  # type: ignore[arg-type]


async def test_a_writer_that_came_first_makes_the_change_run_again(tmp_path: Path) -> None:
    store = CountingStore(tmp_path)
    first, second = _files(tmp_path, store), _files(tmp_path, store)
    await first.write_memory("## Facts\n- zero\n")
    seen: list[str] = []

    def change(text: str) -> str:  # runs in a worker thread, as every change does
        seen.append(text)
        if len(seen) == 1:  # the other writer puts its change in between
            asyncio.run(second.edit_section("Facts", "- from the second writer"))
        return text + "- from the first writer\n"

    backup = await first.update_memory(change)
    text = (tmp_path / "MEMORY.md").read_text(encoding="utf-8")
    assert "- from the second writer" in text and "- from the first writer" in text
    assert len(seen) == 2 and "- from the second writer" in seen[1]  # made again on it
    # the first text, the first writer's change (refused: a version conflict), the
    # second's, the redo
    assert store.keys["put_document"] == ["MEMORY.md"] * 4
    assert backup is not None and backup.read_text(encoding="utf-8") == seen[1]
    assert len(list(first.backups_dir.iterdir())) == 2  # one backup per write, none wasted


def test_two_writers_in_two_threads_lose_no_update(tmp_path: Path) -> None:
    store = FileStore(tmp_path)

    def writer(name: str) -> None:
        files = _files(tmp_path, store)
        for i in range(12):
            asyncio.run(files.edit_section("Notes", f"- {name} {i}"))

    threads = [threading.Thread(target=writer, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    text = (tmp_path / "MEMORY.md").read_text(encoding="utf-8")
    for name in ("a", "b"):
        assert all(f"- {name} {i}\n" in text for i in range(12))


async def test_unchanged_text_is_not_put(tmp_path: Path) -> None:
    store = CountingStore(tmp_path)
    files = _files(tmp_path, store)
    await files.write_memory("## Facts\n- one\n")
    assert await files.write_memory("## Facts\n- one\n") is None
    assert store.calls["put_document"] == 1 and store.calls["get_document"] == 2


async def test_the_legacy_file_is_written_in_place_under_memorys_lock(tmp_path: Path) -> None:
    (tmp_path / "Memory.md").write_text("## Old\n- kept\n", encoding="utf-8")
    store = CountingStore(tmp_path)
    files = _files(tmp_path, store)
    backup = await files.edit_section("Old", "- added")
    assert store.keys["put_document"] == ["Memory.md"]
    assert not (tmp_path / "MEMORY.md").exists()
    assert "- added" in (tmp_path / "Memory.md").read_text(encoding="utf-8")
    assert backup is not None and backup.read_text(encoding="utf-8") == "## Old\n- kept\n"
    assert sorted(p.name for p in (tmp_path / "memory" / ".locks").iterdir()) == ["MEMORY.md.lock"]
    # a holder of memory_lock() keeps the legacy file's writer out too
    lock = files.memory_lock()
    lock.acquire()
    try:
        waiting = asyncio.ensure_future(files.edit_section("Old", "- later"))
        await asyncio.sleep(0.3)
        assert not waiting.done()
    finally:
        lock.release()
    await waiting
    assert "- later" in await files.read_memory()


async def test_the_log_is_appended_by_the_store(tmp_path: Path) -> None:
    store = CountingStore(tmp_path)
    files = _files(tmp_path, store)
    path = await files.append_log("- one")
    await files.append_log("- two", source="summariser")
    assert store.keys["append_text"] == ["memory/2024-05-01.md"] * 2
    assert path.read_text(encoding="utf-8") == (
        "# 2024-05-01\n\n- 12:00 [agent] one\n- 12:00 [summariser] two\n"
    )
    assert await files.read_log(NOON.date()) == path.read_text(encoding="utf-8")
    assert store.keys["get_document"] == ["memory/2024-05-01.md"]


async def test_a_memory_folder_that_is_no_key_runs_the_same_file_code(tmp_path: Path) -> None:
    store = CountingStore(tmp_path)
    files = _files(tmp_path, store, memory_dir="my notes")
    path = await files.append_log("- one")
    assert path == tmp_path / "my notes" / "2024-05-01.md"
    assert path.read_text(encoding="utf-8") == "# 2024-05-01\n\n- 12:00 [agent] one\n"
    assert (tmp_path / "my notes" / ".locks" / "2024-05-01.md.lock").exists()
    assert await files.read_log(NOON.date()) == "# 2024-05-01\n\n- 12:00 [agent] one\n"
    assert "append_text" not in store.calls  # the file code, called directly
    await files.edit_section("Facts", "- x")  # MEMORY.md is a key: the store
    assert store.keys["put_document"] == ["MEMORY.md"]
    assert (tmp_path / "my notes" / ".locks" / "MEMORY.md.lock").exists()


async def test_the_file_codes_errors_come_through(tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("## Secret\n- no\n", encoding="utf-8")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "MEMORY.md").symlink_to(outside)
    files = _files(workspace, CountingStore(workspace))
    with pytest.raises(OutsideWorkspaceError):
        await files.read_memory()
    with pytest.raises(OutsideWorkspaceError):
        await files.edit_section("Facts", "- x")
    assert outside.read_text(encoding="utf-8") == "## Secret\n- no\n"
    assert normalise_text(await _files(workspace, extra_read_roots=[tmp_path]).read_memory())


async def test_a_store_of_another_workspace_is_not_used(tmp_path: Path) -> None:
    other = CountingStore(tmp_path / "other")
    files = _files(tmp_path, other)
    await files.write_memory("## Facts\n- one\n")
    await files.append_log("- one")
    assert not other.calls
    assert (tmp_path / "MEMORY.md").read_text(encoding="utf-8") == "## Facts\n- one\n"
