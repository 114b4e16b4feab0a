"""The contract of streams, on both stores: ordered reads, exactly-once appends by key, all
or nothing across streams, many writers at once."""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from copaw_context.core.store.protocol import StoreError, StreamRecord, WorkspaceStore
from copaw_context.testing import ManualClock
from tests.core.store.kit import KINDS, make_store, opened

DAY = "dialog/2026-05-01.jsonl"


def line(session: str, archive_id: str | None, text: str = "") -> bytes:
    record: dict[str, object] = {"session_id": session}
    if archive_id is not None:
        record["archive_id"] = archive_id
    record["message"] = {"role": "user", "content": text or f"message {archive_id}"}
    return json.dumps(record, ensure_ascii=False).encode()


def keyed(stream: str, session: str, archive_id: str, text: str = "") -> StreamRecord:
    return StreamRecord(stream, f"{session}/{archive_id}", line(session, archive_id, text))


async def test_both_stores_are_workspace_stores(store: WorkspaceStore) -> None:
    assert isinstance(store, WorkspaceStore)
    assert store.workspace_id and store.is_open


async def test_records_read_back_in_order_from_any_position(store: WorkspaceStore) -> None:
    first = [keyed(DAY, "s1", f"m{i}") for i in range(3)]
    result = await store.append(first)
    assert (result.appended, result.skipped_keys) == (3, ())
    await store.append([StreamRecord(DAY, None, line("s1", None, "no key"))])
    entries = await store.read(DAY)
    assert [e.seq for e in entries] == [0, 1, 2, 3]
    assert [e.data for e in entries] == [r.data for r in first] + [line("s1", None, "no key")]
    assert [e.key for e in entries] == ["s1/m0", "s1/m1", "s1/m2", None]
    assert [e.seq for e in await store.read(DAY, start=2)] == [2, 3]
    assert await store.read("dialog/2026-05-02.jsonl") == []


async def test_a_key_is_appended_once_also_within_one_call(store: WorkspaceStore) -> None:
    await store.append([keyed(DAY, "s1", "a")])
    result = await store.append(
        [keyed(DAY, "s1", "a"), keyed(DAY, "s1", "b"), keyed(DAY, "s1", "b"), keyed(DAY, "s2", "a")]
    )
    assert result.appended == 2
    assert result.skipped_keys == ("s1/a", "s1/b")
    assert [e.key for e in await store.read(DAY)] == ["s1/a", "s1/b", "s2/a"]


async def test_one_call_spans_streams_and_a_retry_writes_nothing(store: WorkspaceStore) -> None:
    batch = [keyed(DAY, "s", "1"), keyed("dialog/2026-05-02.jsonl", "s", "2")]
    assert (await store.append(batch)).appended == 2
    again = await store.append(batch)
    assert (again.appended, again.skipped_keys) == (0, ("s/1", "s/2"))
    assert await store.streams("dialog/") == [DAY, "dialog/2026-05-02.jsonl"]
    assert await store.streams("dialog/2026-05-02") == ["dialog/2026-05-02.jsonl"]
    assert await store.streams("memory/") == []


async def test_stream_lengths_count_what_read_returns(store: WorkspaceStore) -> None:
    assert await store.stream_lengths("dialog/") == {}
    await store.append([keyed(DAY, "s", str(i)) for i in range(3)])
    await store.append([keyed("dialog/2026-05-02.jsonl", "s", "x")])
    lengths = await store.stream_lengths("dialog/")
    assert lengths == {DAY: 3, "dialog/2026-05-02.jsonl": 1}
    for name, count in lengths.items():
        assert len(await store.read(name)) == count
    assert await store.stream_lengths("dialog/2026-05-02") == {"dialog/2026-05-02.jsonl": 1}


async def test_a_bad_record_is_refused_before_anything_is_written(store: WorkspaceStore) -> None:
    with pytest.raises(StoreError, match="single line"):
        await store.append([keyed(DAY, "s", "1"), StreamRecord(DAY, None, b'{"a":\n1}')])
    with pytest.raises(StoreError):
        await store.append([StreamRecord("../outside.jsonl", None, b"{}")])
    assert await store.read(DAY) == []


async def test_many_tasks_appending_at_once_lose_and_repeat_nothing(
    store: WorkspaceStore,
) -> None:
    async def writer(task: int) -> None:
        # Each task's own keys, and keys every task tries to write too.
        mine = [keyed(DAY, f"t{task}", str(i)) for i in range(4)]
        shared = [keyed(DAY, "shared", str(i)) for i in range(3)]
        await store.append(mine + shared)

    await asyncio.gather(*(writer(task) for task in range(12)))
    entries = await store.read(DAY)
    keys = [e.key for e in entries]
    assert len(keys) == len(set(keys)) == 12 * 4 + 3
    assert [e.seq for e in entries] == list(range(len(entries)))
    for task in range(12):  # one task's records keep their order
        own = [k for k in keys if k is not None and k.startswith(f"t{task}/")]
        assert own == [f"t{task}/{i}" for i in range(4)]


batches = st.lists(
    st.lists(st.one_of(st.none(), st.integers(0, 6)), min_size=0, max_size=6),
    min_size=1,
    max_size=5,
)


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=15)
@given(plan=batches)
def test_appends_read_back_in_order_each_key_once(kind: str, pg_dsn: str, plan: list) -> None:
    async def scenario() -> None:
        folder = Path(tempfile.mkdtemp(prefix="copaw-store-"))
        store = await opened(make_store(kind, pg_dsn, folder / "ws", ManualClock(time.time())))
        try:
            expected: list[bytes] = []
            seen: set[int] = set()
            serial = 0
            for batch in plan:
                records = []
                for item in batch:
                    serial += 1
                    if item is None:
                        records.append(StreamRecord(DAY, None, line("s", None, f"free {serial}")))
                        expected.append(records[-1].data)
                        continue
                    records.append(keyed(DAY, "s", f"k{item}", f"keyed {item}"))
                    if item not in seen:
                        seen.add(item)
                        expected.append(records[-1].data)
                await store.append(records)
            entries = await store.read(DAY)
            assert [e.data for e in entries] == expected
            assert [e.seq for e in entries] == list(range(len(expected)))
        finally:
            await store.close()
            shutil.rmtree(folder, ignore_errors=True)

    asyncio.run(scenario())
