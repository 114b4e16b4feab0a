"""The offload manifest written in the background: off the step, settled on demand, a
session's newest names win, failures logged and retried, a new event loop starts a writer."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest

from copaw_context.core.toolresults import offload_refs
from copaw_context.core.toolresults.offload import OffloadStore

SESSION = "a" * 32


def _names(n: int) -> set[str]:
    return {f"{i:032x}.txt" for i in range(n)}


def _manifest(store: OffloadStore) -> list[str]:
    data = (store.directory / ".refs" / f"{SESSION}.json").read_text(encoding="utf-8")
    names: list[str] = json.loads(data)["names"]
    return names


async def test_the_manifest_is_written_in_the_background_newest_names_win(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = OffloadStore(tmp_path / "tool_result", 1, workspace=tmp_path)
    written: list[int] = []
    real = offload_refs.write_manifest

    def write(store_dir: Path, workspace: Path | None, sid: str, names: set[str]) -> None:
        written.append(len(set(names)))
        real(store_dir, workspace, sid, names)

    monkeypatch.setattr(offload_refs, "write_manifest", write)
    await store.record_references(SESSION, _names(1))
    assert written == []  # returned before the write
    for n in (2, 3, 4):  # queued behind the first: only the newest is written
        await store.record_references(SESSION, _names(n))
    await store.settle()
    assert sorted(_manifest(store)) == sorted(_names(4))
    assert written[-1] == 4 and len(written) <= 2
    await store.record_references(SESSION, _names(4))  # unchanged, within the hour
    await store.settle()
    assert len(written) <= 2


async def test_a_failed_write_is_logged_and_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    store = OffloadStore(tmp_path / "tool_result", 1, workspace=tmp_path)
    real = offload_refs.write_manifest

    def full(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(offload_refs, "write_manifest", full)
    with caplog.at_level(logging.WARNING, logger="copaw_context"):
        await store.record_references(SESSION, _names(2))
        await store.settle()
    assert "cannot record the offload references" in caplog.text
    monkeypatch.setattr(offload_refs, "write_manifest", real)
    await store.record_references(SESSION, _names(2))  # the same names: tried again
    await store.drain()
    assert sorted(_manifest(store)) == sorted(_names(2))


def test_a_writer_left_on_a_closed_loop_does_not_stop_the_next(tmp_path: Path) -> None:
    store = OffloadStore(tmp_path / "tool_result", 1, workspace=tmp_path)
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(store.record_references(SESSION, _names(1)))
    finally:
        loop.close()  # the writer never ran to its end there

    async def next_loop() -> None:
        await store.record_references(SESSION, _names(3))
        await store.settle()

    asyncio.run(next_loop())
    assert sorted(_manifest(store)) == sorted(_names(3))
