"""The ends of saved outputs kept in memory (copaw_context.core.toolresults._saved_tails):
the compactor's tails come from memory for the files this process saved, exactly as read
from the file, and never for a file outside the store or one that is gone."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from copaw_context.core.toolresults import offload
from copaw_context.core.toolresults._saved_tails import forget_tails
from copaw_context.core.toolresults.offload import OffloadStore

TEXTS = [
    "short\noutput",
    "no newline at all " * 400,
    "\n".join(f"line {i} 错误 ✗ done" for i in range(900)),
    "x" * 2999 + "\n" + "中" * 2000,  # the cut falls inside a three-byte character
    "\n".join(["a" * 5000, "b" * 10, "tail line"]),
    "lone surrogate \ud800 at the end\n" * 300,
    "y" * 4096,
    "z" * 4097 + "\nend",
]


def _store(tmp_path: Path) -> OffloadStore:
    return OffloadStore(tmp_path / "tool_result", 7.0)


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("max_bytes", [100, 3000, 4096])
async def test_a_tail_from_memory_is_the_tail_read_from_the_file(
    tmp_path: Path, text: str, max_bytes: int
) -> None:
    store = _store(tmp_path)
    path = await store.save(text)
    (from_memory,) = await store.read_tails([str(path)], max_bytes)
    forget_tails()
    (from_file,) = await store.read_tails([str(path)], max_bytes)
    assert from_file is not None
    assert from_memory == from_file


async def test_the_files_this_process_saved_are_not_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(tmp_path)
    paths = [await store.save(f"output {i}\nerror: failed {i}\n" * 500) for i in range(3)]
    read: list[Path] = []
    real = offload._read_tail
    monkeypatch.setattr(
        offload, "_read_tail", lambda path, size: read.append(path) or real(path, size)
    )
    tails = await store.read_tails([str(p) for p in paths], 3000)
    assert read == []
    last_lines = [t.splitlines()[-1] if t else t for t in tails]
    assert last_lines == [f"error: failed {i}" for i in range(3)]
    forget_tails()  # another process saved them (or this one restarted): read from the file
    assert await store.read_tails([str(p) for p in paths], 3000) == tails
    assert read == paths


async def test_no_tail_from_memory_for_another_store_or_a_removed_file(tmp_path: Path) -> None:
    mine, other = _store(tmp_path / "a"), _store(tmp_path / "b")
    path = await mine.save("the other store's output\n" * 300)
    assert await other.read_tails([str(path)], 3000) == [None]  # not its own file
    assert (await mine.read_tails([str(path)], 3000))[0]
    old = path.stat().st_mtime - 30 * 86400.0
    os.utime(path, (old, old))
    assert await mine.cleanup() == [path]
    assert await mine.read_tails([str(path)], 3000) == [None]  # gone: no tail, as before
