"""``FileStore.line_counts`` (the archive's listing, ``DialogArchive.list_files``) with the
day files' folder swapped for a link out of the workspace right after every check (issue 20):
no file outside is listed or counted, and a FIFO there is never opened (a read would block
the step for good)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from copaw_context.core.archive.store import ARCHIVE_FILE
from copaw_context.core.store.files import FileStore
from tests.reliability.link_race import LinkRace, swap_after_checks


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    dialog = tmp_path / "ws" / "dialog"
    dialog.mkdir(parents=True)
    (dialog / "2026-02-02.jsonl").write_text("{}\n", encoding="utf-8")
    return tmp_path / "ws"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "2026-02-02.jsonl").write_text("{}\n" * 7, encoding="utf-8")
    (folder / "2026-03-03.jsonl").write_text("{}\n" * 5, encoding="utf-8")
    return folder


@pytest.mark.parametrize("after_check", [None, 1, 2])
async def test_a_folder_swapped_after_its_check_is_never_counted(
    workspace: Path, outside: Path, monkeypatch: pytest.MonkeyPatch, after_check: int | None
) -> None:
    store = FileStore(workspace)
    assert await store.line_counts("dialog/", ARCHIVE_FILE) == {"dialog/2026-02-02.jsonl": 1}
    race = LinkRace(workspace / "dialog", outside, after_check=after_check)
    with swap_after_checks(monkeypatch, race):
        try:
            counts = await store.line_counts("dialog/", ARCHIVE_FILE)
        except OSError as error:  # refused outright: said so, nothing read
            assert "outside the workspace" in str(error)
            counts = {}
    assert race.swaps >= 1
    assert counts in ({}, {"dialog/2026-02-02.jsonl": 1}), counts  # never 7, never 03-03


async def test_a_fifo_swapped_in_for_a_day_file_is_not_opened(
    workspace: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fifo = outside / "2026-02-02.jsonl"
    fifo.unlink()
    os.mkfifo(fifo)  # opened for reading, it blocks until a writer comes
    # A writer that waits for a reader: a read that opens the FIFO ends at once (no hang),
    # counted 0; the thread is let go at the end by a reader of ours.
    writer = threading.Thread(target=lambda: os.close(os.open(fifo, os.O_WRONLY)), daemon=True)
    writer.start()
    race = LinkRace(workspace / "dialog", outside, after_check=2)  # after the file's check
    try:
        with swap_after_checks(monkeypatch, race):
            counts = await FileStore(workspace).line_counts("dialog/", ARCHIVE_FILE)
    finally:
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))  # the writer's open returns
        writer.join()
    assert race.swaps == 1 and counts == {}, counts
