"""The offload write: streamed in chunks, exact bytes, whole when it returns, durable at the
barrier, shared fsyncs."""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import threading
import time
import tracemalloc
from pathlib import Path
from typing import BinaryIO

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from copaw_context.core.toolresults import _offload_write
from copaw_context.core.toolresults.offload import OffloadStore
from copaw_context.core.toolresults.truncation import scrub_surrogates
from copaw_context.core.workspace import durable


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of 7 characters, so chunk boundaries fall everywhere (inside pairs too)."""
    monkeypatch.setattr(_offload_write, "CHUNK_CHARS", 7)


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(parts=st.lists(st.text(max_size=60), min_size=1, max_size=4))
async def test_streamed_save_writes_exactly_the_scrubbed_join(
    tmp_path: Path, small_chunks: None, parts: list[str]
) -> None:
    store = OffloadStore(tmp_path / "tool_result", 1)
    saved = await store.save_parts(parts)
    expected = scrub_surrogates("\n".join(parts)).encode("utf-8")
    assert saved.path.read_bytes() == expected
    assert saved.nbytes == len(expected)
    assert saved.lines == expected.count(b"\n") + 1
    assert (await store.save("\n".join(parts))).read_bytes() == expected


@pytest.mark.parametrize("encoding", ["utf-16", "latin-1", "gbk", "iso2022_jp"])
async def test_other_encodings_stream_like_one_encode(
    tmp_path: Path, small_chunks: None, encoding: str
) -> None:
    store = OffloadStore(tmp_path / "tool_result", 1)
    text = "日本語のテキスト and ASCII, 中文 too\n" * 5 + "\udc80 end"
    path = await store.save(text, encoding=encoding)
    scrubbed = scrub_surrogates(text)
    try:
        expected = scrubbed.encode(encoding)
    except UnicodeEncodeError:
        expected = scrubbed.encode(encoding, errors="backslashreplace")
    assert path.read_bytes() == expected


async def test_unencodable_characters_are_escaped_with_one_warning(
    tmp_path: Path, small_chunks: None, caplog: pytest.LogCaptureFixture
) -> None:
    store = OffloadStore(tmp_path / "tool_result", 1)
    with caplog.at_level(logging.WARNING, logger="copaw_context"):
        path = await store.save("café 中 and 文 and \udc80", encoding="latin-1")
    assert path.read_bytes() == "café \\u4e2d and \\u6587 and \\ufffd".encode("latin-1")
    assert len([r for r in caplog.records if "not fully encodable" in r.message]) == 1


@pytest.mark.parametrize("fail_at", ["write", "replace"])
async def test_a_failed_write_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail_at: str
) -> None:
    store = OffloadStore(tmp_path / "tool_result", 1)

    def broken(*args: object, **kw: object) -> None:
        raise OSError(28, "No space left on device")

    def write_then_fail(handle: BinaryIO, *args: object) -> tuple[int, int]:
        handle.write(b"partial")
        raise OSError(28, "No space left on device")

    if fail_at == "write":
        monkeypatch.setattr(_offload_write, "_write_encoded", write_then_fail)
    else:
        monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError, match="No space left"):
        await store.save("x" * 100_000)
    assert os.listdir(store.directory) == []
    await durable.durable()
    assert durable.pending() == 0  # nothing was handed to the group commit


async def test_a_failed_background_sync_is_logged_and_the_file_stays_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The sync runs after the rename now: a failing one cannot unname the file (the notice
    already names it); it is logged, the barrier still returns, the file is whole."""
    store = OffloadStore(tmp_path / "tool_result", 1)

    def broken(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(durable, "_sync_data", broken)
    with caplog.at_level(logging.ERROR, logger="copaw_context"):
        path = await store.save("y" * 100_000)
        assert path.read_text() == "y" * 100_000  # readable at once
        await durable.durable()
    assert durable.pending() == 0
    assert [r for r in caplog.records if "could not be synced" in r.getMessage()]
    assert path.read_text() == "y" * 100_000
    assert sorted(os.listdir(store.directory)) == [path.name]


async def test_saving_a_huge_text_uses_bounded_memory(tmp_path: Path) -> None:
    store = OffloadStore(tmp_path / "tool_result", 1)
    text = ("log line with 中文 in it\n" * 500_000) + "\udc80"
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        saved = await store.save_parts([text])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak - before < 2_000_000, f"{peak - before} bytes to save {saved.nbytes}"
    assert saved.nbytes == len(scrub_surrogates(text).encode("utf-8")) > 10_000_000
    assert saved.lines == 500_001


async def test_concurrent_saves_are_readable_at_once_and_share_directory_fsyncs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each save is whole under its name when it returns; the barrier returns only after its
    file's sync and a directory fsync that both started after its rename; saves running at
    the same time share directory fsyncs (group commit)."""
    store = OffloadStore(tmp_path / "tool_result", 1)
    clock = itertools.count()
    lock = threading.Lock()
    renamed: dict[str, int] = {}
    synced: dict[str, tuple[int, int]] = {}
    fsyncs: list[tuple[int, int]] = []
    real_replace = os.replace

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str], **kw: int) -> None:
        real_replace(src, dst, **kw)
        with lock:
            renamed[os.path.basename(os.fspath(dst))] = next(clock)

    def sync_data(fd: int) -> None:
        with lock:
            started = next(clock)
        name = os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))
        with lock:
            synced[name] = (started, next(clock))

    def slow_fsync(fd: int) -> None:
        with lock:
            started = next(clock)
        time.sleep(0.05)
        with lock:
            fsyncs.append((started, next(clock)))

    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(durable, "_sync_data", sync_data)
    monkeypatch.setattr(durable, "_sync_folder", slow_fsync)

    async def save(i: int) -> tuple[int, Path]:
        path = await store.save(f"output {i}\n" * 1000)
        assert path.read_text() == f"output {i}\n" * 1000  # readable before any barrier
        return i, path

    results = await asyncio.gather(*(save(i) for i in range(8)))
    await durable.durable()
    with lock:
        flushed = next(clock)
    for i, path in results:
        rename = renamed[path.name]
        start, end = synced[path.name]
        assert rename < start and end < flushed, path
        assert any(end < f_start and f_end < flushed for f_start, f_end in fsyncs), path
        assert path.read_text() == f"output {i}\n" * 1000
    assert 1 <= len(fsyncs) < 8
