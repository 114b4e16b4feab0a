"""Lock files never opened by name: a folder swapped for a link after the lock file was
opened (by descriptor) gets nothing, also while a waiter polls.

filelock 4 resolves the folder of the name it is given (``/proc/self/fd/N`` too) once, then
opens the file by that path at every attempt of a wait; a folder swapped for a link during
the wait sent the lock file outside the workspace (the flaky ``memory_race`` run of
``tests/reliability/test_memory_links_agents.py``) and let a second holder in. The swaps
here are placed right after the lock file's open or right after a waiter's failed attempt,
so each run meets the link.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

import filelock
import pytest

from copaw_context.core.archive.store import DialogArchive
from copaw_context.core.errors import ArchiveError
from copaw_context.core.store.files import FileStore
from copaw_context.core.store.protocol import StoreError, StreamRecord
from copaw_context.core.toolresults import offload_refs
from copaw_context.core.workspace.fd_lock import DescriptorLock, lock_at, open_lock_at
from copaw_context.core.workspace.locked_io import ConfinedLock, file_lock, locked
from tests.reliability.link_race import LinkRace, outside_files, swap_after_opens


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    (folder / "memory").mkdir(parents=True)
    return folder


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    (folder / ".locks").mkdir(parents=True)  # shaped like the memory folder: no help needed
    return folder


def _lock_path(workspace: Path) -> Path:
    return workspace / "memory" / ".locks" / "MEMORY.md.lock"


def test_a_lock_taken_while_its_folder_is_swapped_stays_inside(
    workspace: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    race = LinkRace(workspace / "memory", outside)
    with swap_after_opens(monkeypatch, race, ".lock"):
        with locked(_lock_path(workspace), 5, workspace):
            assert (workspace / "memory").is_symlink() and race.swaps == 1
        assert outside_files(outside) == {}, sorted(outside_files(outside))
    assert _lock_path(workspace).is_file()  # made in the real folder, put back by now


def _swap_when_busy(
    monkeypatch: pytest.MonkeyPatch, race: LinkRace, then: Callable[[], None] = lambda: None
) -> None:
    """Right after the first attempt that finds the lock held, swap the folder (and ``then``)."""
    real = fcntl.flock

    def flock(fd: Any, operation: int) -> None:
        try:
            real(fd, operation)
        except BlockingIOError:
            if not race.swaps:
                race.swap()
                then()
            raise

    monkeypatch.setattr(fcntl, "flock", flock)


def test_a_waiter_polls_its_own_descriptor_not_the_name(
    workspace: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The holder lets go right after the waiter's first failed attempt, and the folder is
    swapped at that moment: the waiter gets the lock on the file inside."""
    race = LinkRace(workspace / "memory", outside)
    holder = file_lock(_lock_path(workspace), 5, workspace)
    holder.acquire()
    _swap_when_busy(monkeypatch, race, holder.release)
    waiter = file_lock(_lock_path(workspace), 5, workspace)
    waiter.acquire()
    try:
        assert race.swaps == 1 and not holder.is_locked and waiter.is_locked
        assert outside_files(outside) == {}, sorted(outside_files(outside))
    finally:
        waiter.release()
        race.restore()


def test_a_waiter_stays_excluded_when_the_folder_is_swapped_during_its_wait(
    workspace: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The holder keeps the lock: a new lock file through the link (free at once) would make
    two holders. The waiter times out instead, and nothing appears outside."""
    race = LinkRace(workspace / "memory", outside)
    with locked(_lock_path(workspace), 5, workspace):
        _swap_when_busy(monkeypatch, race)
        with pytest.raises(filelock.Timeout):
            file_lock(_lock_path(workspace), 0.3, workspace).acquire()
        assert race.swaps == 1 and outside_files(outside) == {}, sorted(outside_files(outside))
        race.restore()


async def test_an_archive_waiting_for_its_lock_never_writes_through_a_swapped_folder(
    workspace: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer holds the day's lock; the dialog folder is swapped while the archive
    waits, then the writer lets go: refused (a link), nothing outside, kept for a retry."""
    dialog = workspace / "dialog"
    dialog.mkdir()
    race = LinkRace(dialog, outside)
    archive = DialogArchive(dialog, session_id="s", agent_name="a", workspace=workspace)
    lock = dialog / f"{date.today().isoformat()}.jsonl.lock"
    other = filelock.FileLock(str(lock), thread_local=False)
    other.acquire()
    _swap_when_busy(monkeypatch, race, other.release)
    message = {"role": "user", "content": "hi"}
    with pytest.raises(ArchiveError) as caught:
        await archive.append([message], [None], ["m1"])
    assert race.swaps == 1 and outside_files(outside) == {}, sorted(outside_files(outside))
    assert "link" in str(caught.value) and "nothing was written" in str(caught.value)
    race.restore()
    written = await archive.append([message], [None], ["m1"])
    assert [f.lines for f in written] == [1] and written[0].path.parent == dialog


def test_confined_locks_exclude_each_other_and_filelock(workspace: Path) -> None:
    """Two lock objects in one process exclude each other like two processes do; so do a
    confined lock and a :class:`filelock.FileLock` on the same file (an older release)."""
    path = _lock_path(workspace)
    first = ConfinedLock(path, 5, workspace)
    with first:
        with pytest.raises(filelock.Timeout) as caught:
            ConfinedLock(path, 0, workspace).acquire()
        assert str(path) in str(caught.value)
        with pytest.raises(filelock.Timeout):
            filelock.FileLock(str(path), thread_local=False).acquire(timeout=0)
    other = filelock.FileLock(str(path), thread_local=False)
    with other, pytest.raises(filelock.Timeout):
        first.acquire(timeout=0)
    assert not first.is_locked


def test_a_descriptor_lock_is_reentrant_and_closes_its_file(workspace: Path) -> None:
    path = _lock_path(workspace)
    path.parent.mkdir(parents=True)
    opened: list[int] = []

    def opener() -> int:
        opened.append(open_lock_at(None, path, workspace))
        return opened[-1]

    lock = DescriptorLock(opener, str(path), 5)
    with lock:
        with lock:
            assert lock.is_locked and len(opened) == 1
        assert lock.is_locked
    assert not lock.is_locked
    assert not _still_open(opened[0], path)
    with lock_at(None, path, workspace, 5), pytest.raises(filelock.Timeout):
        ConfinedLock(path, 0, workspace).acquire()


def _still_open(fd: int, path: Path) -> bool:
    """Whether ``fd`` is still a descriptor of ``path`` (its number may be reused since)."""
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except OSError:
        return False


async def test_a_store_append_waiting_for_its_lock_never_writes_through_a_swapped_folder(
    workspace: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file store's stream append (``FileStore.append``): the same wait and swap as the
    archive's above; refused, nothing outside, and the retry lands once."""
    dialog = workspace / "dialog"
    dialog.mkdir()
    race = LinkRace(dialog, outside)
    store = FileStore(workspace)
    other = filelock.FileLock(str(dialog / "2026-05-01.jsonl.lock"), thread_local=False)
    other.acquire()
    _swap_when_busy(monkeypatch, race, other.release)
    record = StreamRecord(
        "dialog/2026-05-01.jsonl", "s/m1", b'{"session_id": "s", "archive_id": "m1"}'
    )
    with pytest.raises(StoreError, match="nothing was written"):
        await store.append([record])
    assert race.swaps == 1 and outside_files(outside) == {}, sorted(outside_files(outside))
    race.restore()
    assert (await store.append([record])).appended == 1
    assert len(await store.read("dialog/2026-05-01.jsonl")) == 1


def test_the_offload_manifests_lock_stays_inside_a_swapped_folder(
    workspace: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The manifests' lock (``tool_result/.refs/.lock``) waited for while ``.refs`` is swapped
    for a link: taken on the file inside, nothing outside."""
    store_dir = workspace / "tool_result"
    store_dir.mkdir()
    with offload_refs.refs_folder(store_dir, workspace):
        pass  # the folder exists
    race = LinkRace(store_dir / offload_refs.REFS_DIR, outside)
    holder = filelock.FileLock(str(store_dir / ".refs" / ".lock"), thread_local=False)
    holder.acquire()
    _swap_when_busy(monkeypatch, race, holder.release)
    with (
        offload_refs.refs_folder(store_dir, workspace) as refs_fd,
        offload_refs.refs_lock(refs_fd, store_dir, workspace),
    ):
        assert race.swaps == 1
    assert outside_files(outside) == {}, sorted(outside_files(outside))
    race.restore()
