"""The contract of documents (version + compare-and-swap) and leases (a time limit), on
both stores."""

from __future__ import annotations

import asyncio

import pytest

from copaw_context.core.store.protocol import VersionConflictError, WorkspaceStore
from copaw_context.testing import ManualClock


async def test_a_document_is_created_once_then_replaced_by_its_version(
    store: WorkspaceStore,
) -> None:
    missing = await store.get_document("MEMORY.md")
    assert (missing.data, missing.version) == (None, "")
    made = await store.put_document("MEMORY.md", b"# Memory\n", "")
    assert made.version != ""
    with pytest.raises(VersionConflictError) as conflict:
        await store.put_document("MEMORY.md", b"second creator", "")
    assert conflict.value.current == made.version
    read = await store.get_document("MEMORY.md")
    assert (read.data, read.version) == (b"# Memory\n", made.version)
    changed = await store.put_document("MEMORY.md", "# Memory\n- 中文\n".encode(), made.version)
    assert changed.version not in ("", made.version)
    with pytest.raises(VersionConflictError, match="read it again"):
        await store.put_document("MEMORY.md", b"stale", made.version)
    with pytest.raises(VersionConflictError):
        await store.put_document("MEMORY.md", b"made up", "not-a-version")
    assert (await store.get_document("MEMORY.md")).data == "# Memory\n- 中文\n".encode()


async def test_concurrent_read_modify_writes_lose_no_update(store: WorkspaceStore) -> None:
    await store.put_document("memory/.consolidated.json", b"", "")
    conflicts = 0

    async def add(item: int) -> None:
        nonlocal conflicts
        while True:
            current = await store.get_document("memory/.consolidated.json")
            data = (current.data or b"") + f"{item}\n".encode()
            await asyncio.sleep(0)  # let the others read the same version
            try:
                await store.put_document("memory/.consolidated.json", data, current.version)
                return
            except VersionConflictError:
                conflicts += 1

    await asyncio.gather(*(add(item) for item in range(10)))
    final = (await store.get_document("memory/.consolidated.json")).data or b""
    assert sorted(int(x) for x in final.split()) == list(range(10))
    assert conflicts > 0  # the writers did collide, and CAS caught it


async def test_a_lease_excludes_others_until_released(store: WorkspaceStore) -> None:
    lease = await store.acquire_lease("consolidate", 60)
    assert lease is not None
    assert await store.acquire_lease("consolidate", 60) is None
    assert await store.acquire_lease("compact-s1", 60) is not None  # another name
    await store.release_lease(lease)
    again = await store.acquire_lease("consolidate", 60)
    assert again is not None and again.token != lease.token
    await store.release_lease(lease)  # an old lease's release does nothing
    assert await store.acquire_lease("consolidate", 60) is None


async def test_a_lease_expires_at_its_time_limit_unless_renewed(
    store: WorkspaceStore, clock: ManualClock[float]
) -> None:
    lease = await store.acquire_lease("consolidate", 10)
    assert lease is not None
    clock.advance(6)
    renewed = await store.renew_lease(lease, 10)
    assert renewed is not None and renewed.expires_at > lease.expires_at
    clock.advance(6)  # 12 s after taking it, 6 after renewing: still held
    assert await store.acquire_lease("consolidate", 10) is None
    clock.advance(5)
    taker = await store.acquire_lease("consolidate", 10)
    assert taker is not None  # the time limit passed: another holder takes it
    assert await store.renew_lease(lease, 10) is None  # the expired holder learns it
    await store.release_lease(lease)  # and its release leaves the new holder alone
    assert await store.acquire_lease("consolidate", 10) is None
    await store.release_lease(taker)
