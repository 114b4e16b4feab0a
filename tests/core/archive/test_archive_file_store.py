"""A ``DialogArchive`` in a workspace appends through the workspace's file store (issue 20):
the same bytes, line counts and skips as the archive without one (which calls the same
writer, ``store/file_streams.py`` ``append_files``, itself); the rollback and lock errors of
both ways are ``tests/core/archive/test_archive.py``'s (``WAYS``)."""

from __future__ import annotations

import logging
import re
from datetime import timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from copaw_context.core.archive.store import ArchivedFile, DialogArchive
from copaw_context.core.errors import ArchiveError
from copaw_context.testing import CountingStore

UTC8 = timezone(timedelta(hours=8))
DAYS = ["2026-02-02 09:00:00", "2026-02-03 09:00:00", "2026-02-02 10:00:00"]
KEYS = [["m0/0"], ["m1/0"], ["m2/0", "m2/1"]]
_ARCHIVED_AT = re.compile(rb'"archived_at": "[^"]*"')


def message(index: int, *texts: str) -> dict[str, Any]:
    return {
        "id": f"m{index}",
        "role": "assistant",
        "content": [{"type": "text", "text": t} for t in texts or ("hello",)],
    }


def archives(tmp_path: Path, **options: Any) -> tuple[DialogArchive, DialogArchive, CountingStore]:
    """An archive through a counting file store, and one of a standalone folder."""
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    store = CountingStore(ws, **options)
    kept = DialogArchive(
        ws / "dialog", session_id="s-1", agent_name="Friday", tz=UTC8, workspace=ws, files=store
    )
    alone = DialogArchive(tmp_path / "old", session_id="s-1", agent_name="Friday", tz=UTC8)
    return kept, alone, store


def masked(path: Path) -> bytes:
    return _ARCHIVED_AT.sub(b"", path.read_bytes())


async def test_the_same_lines_counts_and_skips_as_the_archive_without_a_store(
    tmp_path: Path,
) -> None:
    kept, alone, store = archives(tmp_path)
    batch = [message(0, "第一条\n多行"), message(1, "bad \udc80 byte"), message(2, "x", "y")]
    for archive in (kept, alone):
        written = await archive.append(batch, DAYS, ["a-0", "a-1", "a-2"], part_keys=KEYS)
        names = [(f.path.name, f.lines) for f in written]
        assert names == [("2026-02-02.jsonl", 2), ("2026-02-03.jsonl", 1)]
        assert all(f.path.parent == archive.directory for f in written)
        # A retry writes nothing; a grown message only its new part.
        assert await archive.append(batch, DAYS, ["a-0", "a-1", "a-2"]) == []
        grown = message(2, "x", "y", "z")
        [again] = await archive.append(
            [grown], [DAYS[2]], ["a-2.grown"], part_keys=[["m2/0", "m2/1", "m2/2"]]
        )
        assert again == ArchivedFile(archive.directory / "2026-02-02.jsonl", 3)
    assert store.calls["append"] == 3
    for name in ("2026-02-02.jsonl", "2026-02-03.jsonl"):
        assert masked(kept.directory / name) == masked(alone.directory / name)


async def test_a_link_out_of_the_workspace_is_refused(tmp_path: Path) -> None:
    kept, _, store = archives(tmp_path)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    kept.directory.symlink_to(outside, target_is_directory=True)
    with pytest.raises(ArchiveError, match="nothing was written"):
        await kept.append([message(0)], DAYS[:1])
    assert store.calls["append"] == 1 and list(outside.iterdir()) == []


async def test_a_folder_that_is_no_store_key_runs_the_writer_itself(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    store = CountingStore(ws)
    archive = DialogArchive(
        ws / "my dialog", session_id="s", agent_name="a", tz=UTC8, workspace=ws, files=store
    )
    [written] = await archive.append([message(0)], DAYS[:1])
    assert written == ArchivedFile(ws / "my dialog" / "2026-02-02.jsonl", 1)
    assert store.calls["append"] == 0
    made = DialogArchive(ws / "dialog", session_id="s", agent_name="a", workspace=ws)
    assert made.files is not None and made.files.workspace == ws.absolute()


async def test_the_listing_goes_through_the_store_with_the_same_counts(tmp_path: Path) -> None:
    kept, alone, store = archives(tmp_path)
    for archive in (kept, alone):
        await archive.append([message(i) for i in range(3)], DAYS)
        (archive.directory / "notes.jsonl").write_text("{}\n")  # not a day file
        (archive.directory / "2026-02-04.jsonl").write_bytes(b'{"a": 1}\n{"torn')
        (archive.directory / "2026-02-05.jsonl").mkdir()  # not a file
    want = [("2026-02-02.jsonl", 2), ("2026-02-03.jsonl", 1), ("2026-02-04.jsonl", 2)]
    for archive in (kept, alone):
        assert [(f.path.name, f.lines) for f in await archive.list_files()] == want
        assert all(f.path.parent == archive.directory for f in await archive.list_files())
    assert store.calls["line_counts"] == 2 and store.keys["line_counts"] == ["dialog/"] * 2
    assert store.calls["read"] == store.calls["stream_lengths"] == 0
    with (kept.directory / "2026-02-03.jsonl").open("ab") as handle:  # grown by another writer
        handle.write(b'{"b": 2}\n')
    assert [f.lines for f in await kept.list_files()] == [2, 2, 2]


async def test_the_listing_errors_read_as_without_a_store(tmp_path: Path) -> None:
    kept, alone, store = archives(tmp_path)
    texts = []
    for archive in (kept, alone):
        archive.directory.parent.mkdir(parents=True, exist_ok=True)
        archive.directory.write_text("a file where the folder goes")
        with pytest.raises(ArchiveError) as caught:
            await archive.list_files()
        assert isinstance(caught.value.__cause__, NotADirectoryError)
        texts.append(str(caught.value).replace(str(archive.directory), "<dialog>"))
    assert texts[0] == texts[1]
    assert texts[0].startswith("cannot list archive directory <dialog>: [Errno 20]")
    assert store.calls["line_counts"] == 1
    for archive in (kept, alone):  # no folder yet: nothing archived
        archive.directory.unlink()
        assert await archive.list_files() == []


async def test_the_listing_through_the_store_never_follows_a_link_out(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    kept, _, store = archives(tmp_path)
    await kept.append([message(0)], DAYS[:1])
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text("{}\n{}\n")
    linked = kept.directory / "2026-02-09.jsonl"
    linked.symlink_to(outside)
    with caplog.at_level(logging.WARNING, logger="copaw_context"):
        listed = await kept.list_files()  # the day file linked out is left out, said
    assert listed == [ArchivedFile(kept.directory / "2026-02-02.jsonl", 1)]
    assert "dialog/2026-02-09.jsonl is not listed" in caplog.text
    assert "outside the workspace" in caplog.text
    linked.unlink()
    elsewhere = tmp_path / "dialog-elsewhere"
    kept.directory.rename(elsewhere)
    kept.directory.symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(ArchiveError, match="outside the workspace") as caught:
        await kept.list_files()
    assert str(caught.value).startswith(f"cannot list archive directory {kept.directory}: ")
    assert store.calls["line_counts"] == 2
