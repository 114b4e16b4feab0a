"""The offload store through the workspace's file store (issue 20): with a workspace every
save, tail and cleanup is the file store's (``put_blob``, ``open_blob``, ``expire_blobs``);
without one, for a folder outside the workspace and for another encoding the store runs the
file code itself, as before. Either way the same files, names and bytes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from copaw_context.core.toolresults._saved_tails import forget_tails
from copaw_context.core.toolresults.offload import OffloadStore
from copaw_context.core.workspace.confine import OutsideWorkspaceError
from copaw_context.testing import CountingStore

_TEXT = "".join(f"line {i}: 数据 {'x' * (i % 40)}\n" for i in range(3000)) + "the end"
_DAY = 86400.0


def _counting(ws: Path, folder: str = "tool_result") -> tuple[OffloadStore, CountingStore]:
    files = CountingStore(ws)
    return OffloadStore(ws / folder, 7, workspace=ws, files=files), files


async def test_a_workspace_store_saves_reads_and_sweeps_through_its_file_store(
    tmp_path: Path,
) -> None:
    store, files = _counting(tmp_path)
    big = await store.save_parts([_TEXT] * 30)  # over INLINE_CHARS: in a worker thread
    small = await store.save_parts(["a", "b"], separator="\r\n")
    assert files.keys["put_blob"] == ["tool_result", "tool_result"]
    assert big.path.parent == tmp_path / "tool_result" and big.key is None  # a path notice
    assert big.path.read_bytes() == "\n".join([_TEXT] * 30).encode()
    assert (small.lines, small.nbytes, small.path.read_bytes()) == (2, 4, b"a\r\nb")
    forget_tails()
    tails = await store.read_tails([big.path, small.path, tmp_path / "x.txt"], 64)
    assert tails[0] is not None and _TEXT.endswith(tails[0]) and tails[1:] == ["a\r\nb", None]
    assert files.calls["open_blob"] == 2  # only the store's own files are opened
    stale = big.path.stat().st_mtime - 8 * _DAY
    for saved in (big, small):
        os.utime(saved.path, (stale, stale))
    assert await store.cleanup([small.path.name]) == [big.path]
    assert files.calls["expire_blobs"] == 1 and small.path.exists() and not big.path.exists()


async def test_without_a_workspace_outside_it_or_another_encoding_the_file_code_runs(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    assert OffloadStore(tmp_path / "bare", 7).files is None
    bare = await OffloadStore(tmp_path / "bare", 7).save("caf\u00e9")
    assert bare.read_bytes() == "caf\u00e9".encode()
    outside, files = _counting(ws, "../elsewhere")
    with pytest.raises(OutsideWorkspaceError):  # confined to the workspace, as before
        await outside.save("x")
    assert files.calls["put_blob"] == 0
    store, files = _counting(ws)
    latin = await store.save_parts(["caf\u00e9"], encoding="latin-1")
    assert latin.path.read_bytes() == b"caf\xe9" and files.calls["put_blob"] == 0
    other = OffloadStore(ws / "tool_result", 7, workspace=ws, files=CountingStore(tmp_path))
    assert (await other.save("y")).read_bytes() == b"y"  # a store of another folder: unused
    assert isinstance(other.files, CountingStore) and other.files.calls["put_blob"] == 0


async def test_a_write_that_fails_raises_what_the_file_code_raises(tmp_path: Path) -> None:
    store, files = _counting(tmp_path)
    (tmp_path / "tool_result").write_text("a file where the folder should be")
    file_code = OffloadStore(
        tmp_path / "tool_result", 7, workspace=tmp_path, files=CountingStore(tmp_path / "no")
    )
    with pytest.raises(OSError) as by_file_code:
        await file_code.save("text")
    with pytest.raises(OSError) as through_the_store:
        await store.save("text")
    assert files.calls["put_blob"] == 1  # tried, and not wrapped in a StoreError
    assert type(through_the_store.value) is type(by_file_code.value)
    assert str(through_the_store.value) == str(by_file_code.value)
    assert os.listdir(tmp_path) == ["tool_result"]  # nothing left behind
