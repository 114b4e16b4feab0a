"""The contract of blobs, on both stores: line-range reads exactly as stored (CRLF, no
trailing newline, multibyte UTF-8), and expiry by age that never takes a referenced blob."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from copaw_context.core.store.lines import BLOB_NAME
from copaw_context.core.store.protocol import StoreError, WorkspaceStore
from copaw_context.testing import ManualClock
from tests.core.store.kit import KINDS, make_store, opened

DAY_SECONDS = 86400.0


def expected_lines(data: bytes, first: int, last: int | None) -> bytes:
    """Lines split after each ``\\n`` only (a ``\\r`` stays in its line), 1-based."""
    lines = data.split(b"\n")
    pieces = [piece + b"\n" for piece in lines[:-1]] + [lines[-1]]
    stop = len(pieces) if last is None else last
    return b"".join(pieces[first - 1 : stop])


async def test_a_blob_is_named_in_its_folder_and_reads_back_whole(store: WorkspaceStore) -> None:
    info = await store.put_blob("tool_result", ["line one", "line two", "三行目"])
    folder, _, name = info.key.rpartition("/")
    assert folder == "tool_result" and BLOB_NAME.fullmatch(name)
    data = "line one\nline two\n三行目".encode()
    assert (info.lines, info.nbytes) == (3, len(data))
    whole = await store.read_lines(info.key)
    assert (whole.data, whole.total_lines) == (data, 3)
    found = await store.blob_info(info.key)
    assert found is not None
    assert (found.key, found.lines, found.nbytes) == (info.key, 3, len(data))


@pytest.mark.parametrize(
    ("text", "first", "last", "want"),
    [
        ("a\r\nb\r\nc", 2, 2, b"b\r\n"),  # CRLF: the \r is part of the line
        ("a\r\nb\r\nc", 3, None, b"c"),  # no trailing newline
        ("a\nb\n", 3, 3, b""),  # a text ending in \n has an empty last line
        ("a\nb\n", 2, 9, b"b\n"),  # past the end: up to the end
        ("a\nb", 5, None, b""),  # starting past the end: nothing
        ("中文\n😀 x\nend", 2, 2, "😀 x\n".encode()),  # multibyte UTF-8
        ("only", 1, 1, b"only"),
    ],
)
async def test_line_ranges(
    store: WorkspaceStore, text: str, first: int, last: int | None, want: bytes
) -> None:
    info = await store.put_blob("tool_result", [text])
    got = await store.read_lines(info.key, first, last)
    assert got.data == want
    assert got.total_lines == text.count("\n") + 1


async def test_a_lone_surrogate_is_saved_as_the_replacement_character(
    store: WorkspaceStore,
) -> None:
    info = await store.put_blob("tool_result", ["a\udc80b"])
    assert (await store.read_lines(info.key)).data == "a\ufffdb".encode()


async def test_bad_reads_are_store_errors(store: WorkspaceStore) -> None:
    info = await store.put_blob("tool_result", ["x"])
    with pytest.raises(StoreError):
        await store.read_lines("tool_result/" + "0" * 32 + ".txt")
    with pytest.raises(StoreError):
        await store.read_lines(info.key, 0)
    with pytest.raises(StoreError):
        await store.read_lines(info.key, 3, 2)
    with pytest.raises(StoreError):
        await store.read_lines("../etc/passwd")
    assert await store.blob_info("tool_result/" + "0" * 32 + ".txt") is None


async def test_blobs_are_listed_by_folder(store: WorkspaceStore) -> None:
    one = await store.put_blob("tool_result", ["1"])
    two = await store.put_blob("tool_result", ["2\n"])
    await store.put_blob("dialog/requests", ["3"])
    listed = await store.list_blobs("tool_result")
    assert [b.key for b in listed] == sorted([one.key, two.key])
    assert [b.lines for b in listed] == [1 if b.key == one.key else 2 for b in listed]
    assert [b.key for b in await store.list_blobs("dialog/requests")] != []
    assert await store.list_blobs("nothing") == []


async def test_expiry_takes_old_blobs_but_never_a_referenced_one(
    store: WorkspaceStore, clock: ManualClock[float]
) -> None:
    old = await store.put_blob("tool_result", ["old"])
    kept = await store.put_blob("tool_result", ["referenced"])
    by_path = await store.put_blob("tool_result", ["named by a path"])
    other = await store.put_blob("dialog/requests", ["another folder"])
    assert await store.expire_blobs("tool_result", DAY_SECONDS) == []  # all young
    clock.advance(3 * DAY_SECONDS)
    removed = await store.expire_blobs(
        "tool_result", DAY_SECONDS, [kept.key.rpartition("/")[2], f"/ws/{by_path.key}"]
    )
    assert removed == [old.key]
    assert await store.blob_info(old.key) is None
    assert (await store.read_lines(kept.key)).data == b"referenced"
    assert await store.blob_info(other.key) is not None  # only the folder named
    # A kept blob's stamp was refreshed: half a period later it is still young.
    clock.advance(DAY_SECONDS / 2)
    assert await store.expire_blobs("tool_result", DAY_SECONDS) == []
    clock.advance(DAY_SECONDS)
    assert await store.expire_blobs("tool_result", DAY_SECONDS) == sorted([kept.key, by_path.key])


texts = st.lists(
    st.sampled_from(["a", "bc", "\n", "\r\n", "\r", "中", "文字", "😀", " ", "é"]), max_size=30
).map("".join)


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=20)
@given(text=texts, first=st.integers(1, 12), span=st.one_of(st.none(), st.integers(0, 12)))
def test_any_range_is_the_stored_bytes(
    kind: str, pg_dsn: str, text: str, first: int, span: int | None
) -> None:
    last = None if span is None else first + span

    async def scenario() -> None:
        folder = Path(tempfile.mkdtemp(prefix="copaw-store-"))
        store = await opened(make_store(kind, pg_dsn, folder / "ws", ManualClock(time.time())))
        try:
            info = await store.put_blob("tool_result", [text])
            data = text.encode()
            got = await store.read_lines(info.key, first, last)
            assert got.data == expected_lines(data, first, last)
            assert got.total_lines == info.lines == data.count(b"\n") + 1
        finally:
            await store.close()
            shutil.rmtree(folder, ignore_errors=True)

    asyncio.run(scenario())
