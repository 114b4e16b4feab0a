"""Tests for the dialog archive (copaw_context.core.archive.store)."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import uuid
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import filelock
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from copaw_context.core.archive.store import (
    ArchivedFile,
    ArchivePartialWriteError,
    DialogArchive,
    parse_timestamp,
    read_archive,
)
from copaw_context.core.errors import ArchiveError
from copaw_context.testing import CountingStore

UTC8 = timezone(timedelta(hours=8))


def message(index: int, text: str = "hello", role: str = "user") -> dict[str, Any]:
    return {
        "id": f"m{index}",
        "name": "alice",
        "role": role,
        "content": [{"type": "text", "text": text}],
        "metadata": {},
    }


WAYS = ["alone", "store"]
"""How an archive reaches its files: the writer called by itself (no workspace), or the
workspace's file store (``FileStore.append``)."""


def make_archive(
    tmp_path: Path, session: str = "s-1", way: str = "alone", **kwargs: Any
) -> DialogArchive:
    if way == "store":
        store = CountingStore(tmp_path, lock_timeout=kwargs.get("lock_timeout", 30.0))
        kwargs.update(workspace=tmp_path, files=store)
    return DialogArchive(
        tmp_path / "dialog", session_id=session, agent_name="Friday", tz=UTC8, **kwargs
    )


def appends(archive: DialogArchive) -> int:
    """How many appends went through the archive's counting store (0: none)."""
    return archive.files.calls["append"] if isinstance(archive.files, CountingStore) else 0


def listings(archive: DialogArchive) -> int:
    """How many listings went through the archive's counting store (0: none)."""
    files = archive.files
    return files.calls["line_counts"] if isinstance(files, CountingStore) else 0


# --- dates and order ----------------------------------------------------------------------


async def test_batch_across_midnight_splits_by_own_timestamp(tmp_path: Path) -> None:
    archive = make_archive(tmp_path)
    messages = [message(i, f"msg {i}") for i in range(4)]
    timestamps = [
        "2026-11-29 23:59:58.100",  # local (naive) time
        "2026-11-30T00:00:01",
        "2026-11-29T15:59:59Z",  # 23:59:59 at +08:00
        "2026-11-29T16:30:00+00:00",  # 00:30 next day at +08:00
    ]
    written = await archive.append(messages, timestamps)
    day1 = archive.directory / "2026-11-29.jsonl"
    day2 = archive.directory / "2026-11-30.jsonl"
    assert written == [ArchivedFile(day1, 2), ArchivedFile(day2, 2)]
    assert [r["message"]["id"] for r in read_archive(day1)] == ["m0", "m2"]
    assert [r["message"]["id"] for r in read_archive(day2)] == ["m1", "m3"]
    assert [r["timestamp"] for r in read_archive(day1)] == [timestamps[0], timestamps[2]]


async def test_order_preserved_and_round_trip(tmp_path: Path) -> None:
    archive = make_archive(tmp_path, session="telegram:42")
    texts = ["第一条\n多行", 'quote " and \\ backslash', "emoji 🐾", "line\u2028sep", "z"]
    # Deliberately out of timestamp order: the given order is kept.
    stamps = [f"2026-01-05 10:0{9 - i}:00" for i in range(len(texts))]
    originals = [
        message(i, text, role="assistant" if i % 2 else "user") for i, text in enumerate(texts)
    ]
    await archive.append(originals, stamps)
    await archive.append([message(99, "later")], ["2026-01-05 08:00:00"])
    records = list(read_archive(archive.directory / "2026-01-05.jsonl"))
    assert [r["message"] for r in records] == [*originals, message(99, "later")]
    for record in records:
        assert record["session_id"] == "telegram:42"
        assert record["agent_name"] == "Friday"
        assert datetime.fromisoformat(record["archived_at"]).utcoffset() == timedelta(hours=8)
    raw = (archive.directory / "2026-01-05.jsonl").read_bytes()
    assert raw.count(b"\n") == len(texts) + 1
    assert "第一条".encode() in raw  # ensure_ascii=False


async def test_missing_or_bad_timestamp_means_now(tmp_path: Path) -> None:
    archive = make_archive(tmp_path)
    written = await archive.append([message(0), message(1), message(2)], [None, "not a date", ""])
    today = datetime.now(UTC8).date()
    # The batch may straddle midnight by a hair; every message lands on "now".
    assert {f.path.name for f in written} <= {
        f"{today.isoformat()}.jsonl",
        f"{(today + timedelta(days=1)).isoformat()}.jsonl",
    }
    assert sum(f.lines for f in written) == 3
    records = [r for f in written for r in read_archive(f.path)]
    assert [r["timestamp"] for r in records] == [None, "not a date", ""]


def test_parse_timestamp_leniency() -> None:
    assert parse_timestamp("2026-11-29 19:24:21.123", UTC8) == datetime(
        2026, 11, 29, 19, 24, 21, 123000, tzinfo=UTC8
    )
    nanos = parse_timestamp("2026-11-29T11:24:21.123456789Z", UTC8)
    assert nanos == datetime(2026, 11, 29, 19, 24, 21, 123456, tzinfo=UTC8)
    assert parse_timestamp("2026-11-29 19:24:21,5", UTC8) == datetime(
        2026, 11, 29, 19, 24, 21, 500000, tzinfo=UTC8
    )
    assert parse_timestamp("  2026-11-29  ", UTC8) == datetime(2026, 11, 29, tzinfo=UTC8)
    epoch = parse_timestamp(0, UTC)
    assert epoch == datetime(1970, 1, 1, tzinfo=UTC)
    for bad in (None, "", "yesterday", "2026-13-01", True, [], "2026-11-29T25:00"):
        assert parse_timestamp(bad, UTC8) is None, bad
    local = parse_timestamp("2026-06-01 12:00:00")
    assert local is not None and local.tzinfo is not None


async def test_default_timezone_is_machine_local(tmp_path: Path) -> None:
    archive = DialogArchive(tmp_path, session_id="s", agent_name="a")
    stamp = "2026-03-03 12:00:00"
    [written] = await archive.append([message(0)], [stamp])
    assert written.path.name == "2026-03-03.jsonl"


# --- failures -----------------------------------------------------------------------------


async def test_non_serialisable_message_writes_nothing(tmp_path: Path) -> None:
    archive = make_archive(tmp_path)
    await archive.append([message(0)], ["2026-01-01 10:00:00"])
    before = (archive.directory / "2026-01-01.jsonl").read_bytes()
    bad = message(2)
    bad["metadata"] = {"handle": object()}
    with pytest.raises(
        ArchiveError, match=r"message #2 to .*2026-01-02\.jsonl.*not JSON-serialisable"
    ):
        await archive.append(
            [message(1), message(3), bad],
            ["2026-01-01 11:00:00", "2026-01-03 11:00:00", "2026-01-02 11:00:00"],
        )
    assert (archive.directory / "2026-01-01.jsonl").read_bytes() == before
    assert sorted(p.name for p in archive.directory.iterdir() if p.suffix == ".jsonl") == [
        "2026-01-01.jsonl"
    ]

    circular: dict[str, Any] = message(4)
    circular["self"] = circular
    with pytest.raises(ArchiveError, match="not JSON-serialisable"):
        await archive.append([circular], [None])
    with pytest.raises(ArchiveError, match="expected a dict"):
        await archive.append(["plain string"], [None])  # type: ignore[list-item]
    assert (archive.directory / "2026-01-01.jsonl").read_bytes() == before


async def test_lone_surrogate_is_kept_losslessly(tmp_path: Path) -> None:
    archive = make_archive(tmp_path)
    [written] = await archive.append([message(0, "bad \udc80 byte")], ["2026-01-01 00:00:00"])
    [record] = read_archive(written.path)
    assert record["message"]["content"][0]["text"] == "bad \udc80 byte"


async def test_length_mismatch_and_bad_arguments(tmp_path: Path) -> None:
    archive = make_archive(tmp_path)
    with pytest.raises(ValueError, match="2 messages but 1 timestamps"):
        await archive.append([message(0), message(1)], [None])
    assert await archive.append([], []) == []
    assert not archive.directory.exists()
    with pytest.raises(ValueError, match="session_id"):
        DialogArchive(tmp_path, session_id="", agent_name="a")
    with pytest.raises(TypeError, match="tz"):
        DialogArchive(tmp_path, session_id="s", agent_name="a", tz="UTC")  # type: ignore[arg-type]


async def test_uncreatable_directory_raises_archive_error(tmp_path: Path) -> None:
    blocker = tmp_path / "workspace"
    blocker.write_text("a file where a directory should be")
    archive = DialogArchive(blocker / "dialog", session_id="s", agent_name="a", tz=UTC8)
    with pytest.raises(ArchiveError, match="cannot create archive directory .*dialog"):
        await archive.append([message(0)], [None])


async def test_unwritable_target_file_raises_archive_error(tmp_path: Path) -> None:
    archive = make_archive(tmp_path)
    (archive.directory / "2026-02-02.jsonl").mkdir(parents=True)  # a directory in the way
    with pytest.raises(ArchiveError, match=r"2026-02-02\.jsonl.*nothing was written") as info:
        await archive.append([message(0)], ["2026-02-02 09:00:00"])
    assert not isinstance(info.value, ArchivePartialWriteError)


TWO_DAYS = ["2026-02-02 09:00:00", "2026-02-03 09:00:00", "2026-02-02 10:00:00"]


@pytest.mark.parametrize("way", WAYS)
async def test_failed_batch_leaves_no_line_anywhere_and_a_retry_writes_each_once(
    tmp_path: Path, way: str
) -> None:
    archive = make_archive(tmp_path, way=way)
    day1 = archive.directory / "2026-02-02.jsonl"
    day2 = archive.directory / "2026-02-03.jsonl"
    day2.mkdir(parents=True)  # a directory sitting where the second day's file should be
    earlier = json.dumps({"session_id": "old", "message": {"id": "x"}}) + "\n"
    day1.write_text(earlier + '{"torn', encoding="utf-8")  # torn last line: cut off
    before = earlier.encode()
    batch = [message(0), message(1), message(2)]

    with pytest.raises(ArchiveError, match=r"2026-02-03\.jsonl.*nothing was written") as info:
        await archive.append(batch, TWO_DAYS)
    assert not isinstance(info.value, ArchivePartialWriteError)
    assert "rolled back 1 other file" in str(info.value)
    assert day1.read_bytes() == before  # the first day's lines were undone

    day2.rmdir()
    written = await archive.append(batch, TWO_DAYS)  # the caller kept the messages: retry
    assert written == [ArchivedFile(day1, 3), ArchivedFile(day2, 1)]  # x, m0, m2
    ids = [record["message"]["id"] for path in (day1, day2) for record in read_archive(path)]
    assert sorted(ids) == ["m0", "m1", "m2", "x"]  # every message exactly once
    assert appends(archive) == (2 if way == "store" else 0)


@pytest.mark.parametrize("way", WAYS)
async def test_lock_timeout_on_a_later_day_writes_nothing(tmp_path: Path, way: str) -> None:
    archive = make_archive(tmp_path, way=way, lock_timeout=0.05)
    archive.directory.mkdir(parents=True)
    day1 = archive.directory / "2026-02-02.jsonl"
    with (
        filelock.FileLock(str(archive.directory / "2026-02-03.jsonl.lock")),
        pytest.raises(ArchiveError, match=r"timed out after 0\.05 s .*nothing was written") as info,
    ):
        await archive.append([message(0), message(1)], TWO_DAYS[:2])
    assert not isinstance(info.value, ArchivePartialWriteError)
    assert not day1.exists() or day1.read_bytes() == b""
    assert appends(archive) == (1 if way == "store" else 0)


@pytest.mark.parametrize("way", WAYS)
async def test_failed_rollback_names_the_files_that_may_duplicate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, way: str
) -> None:
    archive = make_archive(tmp_path, way=way)
    day1 = archive.directory / "2026-02-02.jsonl"
    day2 = archive.directory / "2026-02-03.jsonl"
    day2.mkdir(parents=True)
    real_fsync = os.fsync

    def fsync_failing_on_rollback(fd: int) -> None:
        if os.fstat(fd).st_size == 0:  # only the rollback of the new day1 file syncs 0 bytes
            raise OSError(5, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync_failing_on_rollback)
    with pytest.raises(ArchivePartialWriteError) as info:
        await archive.append([message(0), message(1)], TWO_DAYS[:2])
    assert info.value.written == (ArchivedFile(day1, 1),)
    assert info.value.failed == day2
    assert str(day1) in str(info.value) and "duplicate" in str(info.value)
    assert appends(archive) == (1 if way == "store" else 0)


async def test_lock_timeout_raises_archive_error(tmp_path: Path) -> None:
    archive = make_archive(tmp_path, lock_timeout=0.05)
    archive.directory.mkdir(parents=True)
    target = archive.directory / "2026-04-04.jsonl"
    with (
        filelock.FileLock(str(target) + ".lock"),
        pytest.raises(ArchiveError, match="timed out .* waiting for"),
    ):
        await archive.append([message(0)], ["2026-04-04 10:00:00"])
    assert not target.exists() or target.read_bytes() == b""
    [written] = await archive.append([message(1)], ["2026-04-04 10:00:00"])
    assert written.lines == 1


# --- torn lines and listing ---------------------------------------------------------------


async def test_torn_last_line_is_cut_off_and_does_not_corrupt_next_record(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A line torn by a writer killed mid-append is cut off (its messages were not
    committed), so that every line parses; an unterminated line that parses is kept."""
    archive = make_archive(tmp_path)
    archive.directory.mkdir(parents=True)
    target = archive.directory / "2026-05-05.jsonl"
    good = json.dumps({"session_id": "old", "message": {"id": "x"}}) + "\n"
    target.write_text(good + '{"session_id": "old", "mess', encoding="utf-8")
    with caplog.at_level("WARNING", logger="copaw_context"):
        [written] = await archive.append([message(0), message(1)], ["2026-05-05 10:00:00"] * 2)
    assert written.lines == 3  # good line, two new records
    assert any("cut a torn last line" in rec.getMessage() for rec in caplog.records)
    assert [json.loads(line)["message"]["id"] for line in target.read_text().splitlines()] == [
        "x",
        "m0",
        "m1",
    ]

    with open(target, "a", encoding="utf-8") as handle:  # complete, but not terminated
        handle.write(json.dumps({"session_id": "old", "message": {"id": "y"}}))
    [written] = await archive.append([message(2)], ["2026-05-05 10:00:00"])
    assert written.lines == 5
    assert [r["message"]["id"] for r in read_archive(target)] == ["x", "m0", "m1", "y", "m2"]


@pytest.mark.parametrize("way", WAYS)
async def test_list_files_oldest_first_with_counts(tmp_path: Path, way: str) -> None:
    archive = make_archive(tmp_path, way=way)
    assert await archive.list_files() == []
    await archive.append([message(i) for i in range(3)], ["2026-01-10 10:00:00"] * 3)
    await archive.append([message(3)], ["2025-12-31 10:00:00"])
    (archive.directory / "notes.jsonl").write_text("{}\n")
    (archive.directory / "2026-01-11.jsonl.bak").write_text("{}\n")
    torn = archive.directory / "2026-01-12.jsonl"
    torn.write_bytes(b'{"a": 1}\n{"torn')
    files = await archive.list_files()
    assert files == [
        ArchivedFile(archive.directory / "2025-12-31.jsonl", 1),
        ArchivedFile(archive.directory / "2026-01-10.jsonl", 3),
        ArchivedFile(torn, 2),
    ]
    assert listings(archive) == (2 if way == "store" else 0)


@pytest.mark.parametrize("way", WAYS)
async def test_list_files_counts_large_file_in_chunks(tmp_path: Path, way: str) -> None:
    archive = make_archive(tmp_path, way=way)
    big_text = "x" * 400_000  # several lines cross the 1 MiB chunk boundary
    for index in range(6):
        await archive.append([message(index, big_text)], ["2026-07-07 10:00:00"])
    [listed] = await archive.list_files()
    assert listed.lines == 6
    assert len(list(read_archive(listed.path))) == 6


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    texts=st.lists(st.text(max_size=60), min_size=1, max_size=6),
    minutes=st.lists(st.integers(min_value=0, max_value=3 * 24 * 60), min_size=6, max_size=6),
)
async def test_every_message_archived_once_in_order(
    tmp_path: Path, texts: list[str], minutes: list[int]
) -> None:
    root = tmp_path / uuid.uuid4().hex
    archive = DialogArchive(root, session_id="h", agent_name="a", tz=UTC8)
    start = datetime(2026, 8, 1, tzinfo=UTC8)
    stamps = [(start + timedelta(minutes=m)).isoformat() for m in minutes[: len(texts)]]
    messages = [message(i, text) for i, text in enumerate(texts)]
    written = await archive.append(messages, stamps)
    assert sum(f.lines for f in written) == len(messages)
    seen: list[dict[str, Any]] = []
    for archived in await archive.list_files():
        day = archived.path.name[:10]
        for record in read_archive(archived.path):
            assert record["timestamp"][:10] == day
            seen.append(record["message"])
    assert sorted(seen, key=lambda m: m["id"]) == messages
    for archived in written:
        ids = [r["message"]["id"] for r in read_archive(archived.path)]
        assert ids == sorted(ids)  # given order kept within each file


# --- concurrency --------------------------------------------------------------------------

PROCESSES = 4
BATCHES = 50
BATCH_SIZE = 4


def _append_worker(directory: str, worker: int) -> None:
    archive = DialogArchive(
        Path(directory), session_id=f"proc-{worker}", agent_name="Friday", tz=UTC8
    )

    async def run() -> None:
        for batch in range(BATCHES):
            msgs = [
                {"worker": worker, "batch": batch, "index": i, "text": f"第{i}行\nline two " * 20}
                for i in range(BATCH_SIZE)
            ]
            # Two days per batch: each file gets its part of every batch.
            stamps = ["2026-09-09 12:00:00", "2026-09-10 12:00:00"] * (BATCH_SIZE // 2)
            await archive.append(msgs, stamps)

    asyncio.run(run())


def test_concurrent_processes_never_interleave(tmp_path: Path) -> None:
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    workers = [
        context.Process(target=_append_worker, args=(str(tmp_path), worker))
        for worker in range(PROCESSES)
    ]
    for process in workers:
        process.start()
    for process in workers:
        process.join(timeout=120)
    assert [process.exitcode for process in workers] == [0] * PROCESSES

    per_file = BATCH_SIZE // 2
    for name in ("2026-09-09.jsonl", "2026-09-10.jsonl"):
        lines = (tmp_path / name).read_bytes().split(b"\n")
        assert lines[-1] == b""
        records = [json.loads(line) for line in lines[:-1]]  # every line parses
        assert len(records) == PROCESSES * BATCHES * per_file
        keys = [(r["message"]["worker"], r["message"]["batch"]) for r in records]
        # Each batch's lines are contiguous and in order.
        for start in range(0, len(records), per_file):
            chunk = records[start : start + per_file]
            assert len({keys[start + k] for k in range(per_file)}) == 1
            indices = [r["message"]["index"] for r in chunk]
            assert indices == sorted(indices)
            assert chunk[0]["session_id"] == f"proc-{chunk[0]['message']['worker']}"
        # Each worker's batches arrive in its own order.
        for worker in range(PROCESSES):
            batches = [b for w, b in keys[::per_file] if w == worker]
            assert batches == list(range(BATCHES))


@pytest.mark.parametrize("way", WAYS)
async def test_line_counts_stay_exact_as_files_grow_and_shrink(tmp_path: Path, way: str) -> None:
    archive = make_archive(tmp_path, way=way)
    stamp = "2026-11-29T10:00:00+00:00"
    for batch in range(1, 4):
        await archive.append([{"n": i} for i in range(batch)], [stamp] * batch)
        (listed,) = await archive.list_files()
        assert listed.lines == sum(range(1, batch + 1))
    path = listed.path
    with open(path, "r+b") as handle:  # someone cut the file back by hand
        handle.truncate(len(path.read_bytes().split(b"\n", 2)[0]) + 1)
    (listed,) = await archive.list_files()
    assert listed.lines == 1
    with open(path, "ab") as handle:  # and appended a torn line
        handle.write(b'{"torn": tr')
    (listed,) = await archive.list_files()
    assert listed.lines == 2


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    moments=st.lists(
        st.datetimes(
            min_value=datetime(2020, 1, 1), max_value=datetime(2030, 12, 31), timezones=st.just(UTC)
        ),
        min_size=1,
        max_size=6,
    )
)
def test_day_files_name_the_files_an_append_writes(tmp_path: Path, moments: list[datetime]) -> None:
    """The guide's room is planned from day_files: exactly the files append then writes."""
    directory = tmp_path / uuid.uuid4().hex
    archive = DialogArchive(
        directory, session_id="s", agent_name="a", tz=timezone(timedelta(hours=8))
    )
    stamps: list[str | None] = [m.isoformat() for m in moments] + [None]
    predicted = archive.day_files(stamps)
    written = asyncio.run(archive.append([{"i": i} for i in range(len(stamps))], stamps))
    assert predicted == sorted(f.path for f in written)
    assert predicted == [f.path for f in asyncio.run(archive.list_files())]
