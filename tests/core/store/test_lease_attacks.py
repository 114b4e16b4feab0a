"""``hold_lease`` attacked: cancelled while waiting, while taking, in its block and again
while releasing; the store failing under it; lock files outside the workspace."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from copaw_context.core.memory import MemoryConsolidator, MemoryFiles
from copaw_context.core.store.leases import hold_lease, hold_lock_file
from copaw_context.core.store.postgres import PostgresStore
from copaw_context.core.store.protocol import Lease, StoreError, WorkspaceStore
from copaw_context.core.workspace.confine import OutsideWorkspaceError


def _no_other_tasks() -> None:
    """No renewal, acquire or release task left behind (no "Task was destroyed"); the
    pool's own tasks are not ours."""
    left = [
        task
        for task in asyncio.all_tasks()
        if task is not asyncio.current_task()
        and "/copaw_context/" in task.get_coro().cr_code.co_filename  # type: ignore[union-attr]
    ]
    assert left == []


async def _free(store: WorkspaceStore, name: str) -> bool:
    lease = await store.acquire_lease(name, 60)
    if lease is None:
        return False
    await store.release_lease(lease)
    return True


async def test_a_holder_cancelled_in_its_block_releases_the_lease(store: WorkspaceStore) -> None:
    inside = asyncio.Event()

    async def holder() -> None:
        async with hold_lease(store, "run", 1, 0.3, poll_seconds=0.01):
            inside.set()
            await asyncio.sleep(60)

    task = asyncio.ensure_future(holder())
    await inside.wait()
    await asyncio.sleep(0.15)  # a renewal or so on the way
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    _no_other_tasks()
    assert await _free(store, "run")


async def test_a_holder_cancelled_while_waiting_never_holds_it(store: WorkspaceStore) -> None:
    async with hold_lease(store, "run", 1, 60, poll_seconds=0.01):
        waiting = asyncio.ensure_future(
            hold_lease(store, "run", 30, 60, poll_seconds=0.01).__aenter__()
        )
        await asyncio.sleep(0.05)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
    _no_other_tasks()
    assert await _free(store, "run")


async def test_a_holder_cancelled_while_its_take_is_on_the_way_releases_it(
    store: WorkspaceStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lease is taken (the row written) but the reply is still coming when the holder
    is cancelled: the take is let finish and released."""
    taken, reply = asyncio.Event(), asyncio.Event()
    acquire = store.acquire_lease

    async def slow_reply(name: str, ttl_seconds: float) -> Lease | None:
        lease = await acquire(name, ttl_seconds)
        taken.set()
        await reply.wait()
        return lease

    monkeypatch.setattr(store, "acquire_lease", slow_reply)
    holder = asyncio.ensure_future(hold_lease(store, "run", 1, 60).__aenter__())
    await taken.wait()
    holder.cancel()
    await asyncio.sleep(0.01)
    reply.set()
    with pytest.raises(asyncio.CancelledError):
        await holder
    monkeypatch.undo()
    _no_other_tasks()
    assert await _free(store, "run")


async def test_a_second_cancel_during_the_release_still_releases(
    store: WorkspaceStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task group or timeout cancelling again while the lease is being released."""
    releasing, go_on = asyncio.Event(), asyncio.Event()
    release = store.release_lease

    async def slow_release(lease: Lease) -> None:
        releasing.set()
        await go_on.wait()
        await release(lease)

    monkeypatch.setattr(store, "release_lease", slow_release)

    async def holder() -> None:
        async with hold_lease(store, "run", 1, 60):
            await asyncio.sleep(60)

    task = asyncio.ensure_future(holder())
    await asyncio.sleep(0.05)
    task.cancel()
    await releasing.wait()
    task.cancel()  # again, while releasing
    await asyncio.sleep(0.01)
    go_on.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    monkeypatch.undo()
    _no_other_tasks()
    assert await _free(store, "run")


async def test_a_timeout_around_the_block_still_raises_timeout_error(store: WorkspaceStore) -> None:
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05), hold_lease(store, "run", 1, 60):
            await asyncio.sleep(60)
    _no_other_tasks()
    assert await _free(store, "run")


async def test_renewals_that_fail_are_logged_and_the_block_finishes(
    store: WorkspaceStore, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def down(lease: Lease, ttl_seconds: float) -> Lease | None:
        raise StoreError("the PostgreSQL store failed: connection refused")

    monkeypatch.setattr(store, "renew_lease", down)
    done = False
    with caplog.at_level(logging.WARNING, "copaw_context"):
        async with hold_lease(store, "run", 1, 0.6, poll_seconds=0.01):
            await asyncio.sleep(0.45)  # two renewals (every 0.2 s) within the lease's time
            done = True
    assert done
    assert "renewing the run lease failed: the PostgreSQL store failed" in caplog.text
    _no_other_tasks()
    assert await _free(store, "run")


async def test_a_release_that_fails_is_logged_and_the_block_error_kept(
    store: WorkspaceStore, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def down(lease: Lease) -> None:
        raise StoreError("the PostgreSQL store failed: connection refused")

    monkeypatch.setattr(store, "release_lease", down)
    with caplog.at_level(logging.WARNING, "copaw_context"), pytest.raises(KeyError):
        async with hold_lease(store, "run", 1, 60):
            raise KeyError("the block's own")
    assert "releasing the run lease failed" in caplog.text
    _no_other_tasks()


async def test_postgres_going_away_mid_hold_is_logged_only(
    pg_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    store = PostgresStore(pg_dsn, "agent-pool-closed", max_connections=2)
    await store.open()
    with caplog.at_level(logging.WARNING, "copaw_context"):
        async with hold_lease(store, "run", 1, 0.6, poll_seconds=0.01):
            await store.close()  # the pool gone: renewals and the release fail
            await asyncio.sleep(0.3)
    assert "renewing the run lease failed" in caplog.text
    assert "releasing the run lease failed" in caplog.text
    _no_other_tasks()


# ---------------------------------------------------------------- lock files
async def test_a_lock_file_outside_the_workspace_is_refused(tmp_path: Path) -> None:
    workspace, outside = tmp_path / "ws", tmp_path / "elsewhere"
    workspace.mkdir()
    for lock in (outside / ".locks" / "consolidate.lock", workspace / "memory" / "x.lck"):
        with pytest.raises(StoreError, match="must be a <name>.lock inside the workspace"):
            async with hold_lock_file(lock, workspace, 0.1, 1):
                pytest.fail("held a lock outside the workspace")
    assert not outside.exists()
    assert not (workspace / "memory").exists()


async def test_a_lock_folder_linked_outside_is_refused_and_nothing_written(
    tmp_path: Path,
) -> None:
    workspace, outside = tmp_path / "ws", tmp_path / "elsewhere"
    (workspace / "memory").mkdir(parents=True)
    outside.mkdir()
    (workspace / "memory" / ".locks").symlink_to(outside)
    lock = workspace / "memory" / ".locks" / "consolidate.lock"
    with pytest.raises(StoreError, match="symbolic link"):
        async with hold_lock_file(lock, workspace, 0.1, 1):
            pytest.fail("held a lock through a link leading out")
    assert list(outside.iterdir()) == []
    _no_other_tasks()


async def test_consolidation_with_its_memory_folder_elsewhere_in_the_workspace(
    tmp_path: Path,
) -> None:
    log = tmp_path / "state" / "mem" / "2024-04-30.md"
    log.parent.mkdir(parents=True)
    log.write_text("# 2024-04-30\n\n- 10:00 [agent] Uses pnpm\n", encoding="utf-8")
    files = MemoryFiles(tmp_path, memory_dir="state/mem")
    result = await MemoryConsolidator(files).consolidate()
    assert result.written and "Uses pnpm" in (tmp_path / "MEMORY.md").read_text("utf-8")
    assert (tmp_path / "state" / "mem" / ".locks" / "consolidate.lock").exists()
    assert not (tmp_path / "memory").exists()


async def test_consolidation_with_its_memory_folder_linked_outside_writes_nothing(
    tmp_path: Path,
) -> None:
    workspace, outside = tmp_path / "ws", tmp_path / "elsewhere"
    workspace.mkdir()
    outside.mkdir()
    (outside / "2024-04-30.md").write_text("# 2024-04-30\n\n- 10:00 [agent] x\n", "utf-8")
    (workspace / "memory").symlink_to(outside)
    with pytest.raises(OutsideWorkspaceError):
        await MemoryConsolidator(MemoryFiles(workspace)).consolidate()
    assert [p.name for p in outside.iterdir()] == ["2024-04-30.md"]
    assert not (workspace / "MEMORY.md").exists()
