"""``hold_lease`` on both stores (waited for, renewed, released) and the consolidation's
lock file as the file store's lease."""

from __future__ import annotations

import asyncio
import threading
from datetime import datetime
from pathlib import Path

import filelock
import pytest

from copaw_context.core.memory import MemoryConsolidator, MemoryFiles
from copaw_context.core.store.leases import LeaseHeldError, hold_lease, hold_lock_file
from copaw_context.core.store.protocol import StoreError, WorkspaceStore
from copaw_context.core.workspace.locked_io import file_lock
from copaw_context.testing import ManualClock


async def test_a_held_lease_keeps_others_out_until_released(store: WorkspaceStore) -> None:
    async with hold_lease(store, "consolidate", 1, 60, poll_seconds=0.01) as lease:
        assert lease.name == "consolidate"
        assert await store.acquire_lease("consolidate", 60) is None
        with pytest.raises(LeaseHeldError, match="the consolidate lease for over 0.05 s"):
            async with hold_lease(store, "consolidate", 0.05, 60, poll_seconds=0.01):
                pytest.fail("two holders of one lease")
    after = await store.acquire_lease("consolidate", 60)
    assert after is not None
    await store.release_lease(after)


async def test_a_held_lease_is_renewed_past_its_time(
    store: WorkspaceStore, clock: ManualClock[float]
) -> None:
    async with hold_lease(store, "compact", 1, 0.3, poll_seconds=0.01):
        for _ in range(4):  # 0.8 s of the stores' clock: the first limit long past
            clock.advance(0.2)
            await asyncio.sleep(0.15)  # a renewal (every 0.1 s) sees the clock moved
            assert await store.acquire_lease("compact", 60) is None
    assert await store.acquire_lease("compact", 60) is not None


async def test_a_waiting_holder_gets_the_lease_when_it_is_released(
    store: WorkspaceStore,
) -> None:
    order: list[str] = []

    async def second() -> None:
        async with hold_lease(store, "run", 5, 60, poll_seconds=0.01):
            order.append("second")

    async with hold_lease(store, "run", 1, 60, poll_seconds=0.01):
        waiting = asyncio.ensure_future(second())
        await asyncio.sleep(0.05)
        order.append("first done")
    await waiting
    assert order == ["first done", "second"]


async def test_a_lock_file_held_elsewhere_is_named_in_the_error(tmp_path: Path) -> None:
    lock = tmp_path / "memory" / ".locks" / "consolidate.lock"
    other = file_lock(lock, 0, tmp_path)  # another open of the file: as another process
    other.acquire(timeout=0)
    try:
        with pytest.raises(LeaseHeldError, match=f"{lock} for over 0.1 s; nothing was done"):
            async with hold_lock_file(lock, tmp_path, 0.1, 5):
                pytest.fail("the lock file was held")
    finally:
        other.release()
    async with hold_lock_file(lock, tmp_path, 0.1, 5):
        with pytest.raises(filelock.Timeout):
            file_lock(lock, 0, tmp_path).acquire(timeout=0)
    file_lock(lock, 0, tmp_path).acquire(timeout=0)  # released at the end


async def test_consolidation_waits_for_its_lock_file(tmp_path: Path) -> None:
    log = tmp_path / "memory" / "2024-04-30.md"
    log.parent.mkdir()
    log.write_text("# 2024-04-30\n\n- 10:00 [agent] Uses pnpm\n", encoding="utf-8")
    lock = tmp_path / "memory" / ".locks" / "consolidate.lock"
    other = file_lock(lock, 0, tmp_path)
    other.acquire(timeout=0)
    releaser = threading.Timer(0.3, other.release)
    releaser.start()
    files = MemoryFiles(tmp_path, clock=lambda: datetime(2024, 5, 1, 23, 0).astimezone())
    try:
        result = await MemoryConsolidator(files).consolidate()
    finally:
        releaser.join()
    assert result.written and "Uses pnpm" in (tmp_path / "MEMORY.md").read_text("utf-8")
    assert not other.is_locked  # it ran after the other holder let go


@pytest.mark.parametrize("ttl", [0, -1, float("nan")])
async def test_a_lease_time_that_is_not_positive_is_refused(
    store: WorkspaceStore, ttl: float
) -> None:
    with pytest.raises(StoreError, match="more than 0 s"):
        async with hold_lease(store, "run", 1, ttl):
            pytest.fail("held with no time")
    assert await store.acquire_lease("run", 60) is not None  # nothing was taken
