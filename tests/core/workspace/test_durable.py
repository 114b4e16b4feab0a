"""The background group commit: files synced before their folder, one folder fsync per batch,
a barrier that waits for everything handed over before it, no descriptor kept."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

import pytest

from copaw_context.core.workspace import durable
from copaw_context.core.workspace.confine_write import replace_at, writable_dir
from tests.core.sync_gate import SyncGate


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _write(directory: Path, name: str, data: bytes) -> None:
    with writable_dir(directory, None) as dir_fd:
        replace_at(
            dir_fd, name, f".{name}.tmp", lambda h: h.write(data), keep_mode=False, deferred=True
        )


def test_a_deferred_write_is_whole_at_once_and_durable_at_the_barrier(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sync_gate: SyncGate
) -> None:
    gate = sync_gate
    _write(tmp_path, "a.txt", b"whole")
    assert (tmp_path / "a.txt").read_bytes() == b"whole"  # renamed, readable, not yet synced
    assert sorted(os.listdir(tmp_path)) == ["a.txt"]
    assert durable.pending() == 1
    flushed = threading.Event()
    waiter = threading.Thread(target=lambda: (durable.flush(), flushed.set()))
    waiter.start()
    assert not flushed.wait(0.2), "the barrier returned before the sync"
    gate.open.set()
    waiter.join(30)
    assert flushed.is_set()
    assert durable.pending() == 0
    assert gate.events == [("file", "a.txt"), ("folder", str(tmp_path))]


def test_one_folder_fsync_per_batch_files_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sync_gate: SyncGate
) -> None:
    gate = sync_gate
    first, second = tmp_path / "one", tmp_path / "two"
    _write(first, "held.txt", b"x")  # the thread takes it and waits at the gate
    assert gate.entered.wait(30)
    for n in range(6):
        _write(first if n % 2 else second, f"f{n}.txt", b"y" * n)
    gate.open.set()
    durable.flush()
    kinds = [kind for kind, _ in gate.events]
    # The first batch (one file), then one batch of six files and two folders.
    assert kinds == ["file", "folder"] + ["file"] * 6 + ["folder"] * 2, gate.events
    folders = [path for kind, path in gate.events[2:] if kind == "folder"]
    assert sorted(folders) == sorted([str(first), str(second)])


def test_no_descriptor_is_kept_after_the_barrier(tmp_path: Path) -> None:
    durable.flush()
    before = _open_fds()
    for n in range(40):
        _write(tmp_path, f"{n}.txt", b"z" * 100)
    durable.flush()
    assert _open_fds() == before
    assert len(os.listdir(tmp_path)) == 40


def test_handing_over_waits_when_too_much_is_pending(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sync_gate: SyncGate
) -> None:
    gate = sync_gate
    monkeypatch.setattr(durable, "MAX_PENDING", 2)
    for n in range(2):  # the first is taken by the thread and held: two pending
        _write(tmp_path, f"{n}.txt", b"w")
    assert gate.entered.wait(30)
    done = threading.Event()
    writer = threading.Thread(target=lambda: (_write(tmp_path, "3.txt", b"w"), done.set()))
    writer.start()
    assert not done.wait(0.2), "the descriptors held grew past MAX_PENDING"
    gate.open.set()
    writer.join(30)
    assert done.is_set()
    durable.flush()
    assert durable.pending() == 0


async def test_the_async_barrier_waits_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sync_gate: SyncGate
) -> None:
    gate = sync_gate
    await durable.durable()  # nothing pending: at once
    _write(tmp_path, "b.txt", b"b")
    barrier = asyncio.ensure_future(durable.durable())
    ticks = 0
    for _ in range(5):  # the loop keeps running while the barrier waits
        await asyncio.sleep(0.01)
        ticks += 1
    assert ticks == 5 and not barrier.done()
    gate.open.set()
    await asyncio.wait_for(barrier, 30)
    assert ("file", "b.txt") in gate.events


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_starts_with_nothing_pending(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sync_gate: SyncGate
) -> None:
    gate = sync_gate
    _write(tmp_path, "parent.txt", b"p")
    pid = os.fork()
    if pid == 0:  # the child: its own commit works, the parent's pending sync is not its
        code = 1
        try:
            gate.open.set()
            code = 0 if durable.pending() == 0 else 2
            _write(tmp_path, "child.txt", b"c")
            durable.flush()
            code = code or (0 if durable.pending() == 0 else 3)
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    gate.open.set()
    durable.flush()
    assert (tmp_path / "child.txt").read_bytes() == b"c"
