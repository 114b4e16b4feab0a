"""Check-then-write races: a folder swapped for a link out of the workspace right after its
check never sends a write outside (issue 17: nothing reads or writes outside the workspace).

Each writer of the package (memory files and their locks, the recall index, offloaded tool
output, the dialog archive) runs while :func:`swap_after_checks` replaces its folder with a
link to ``outside`` right after every check. Nothing may appear in ``outside``; the write is
refused with an error naming the folder (the data stays with the caller) and what was there
before is kept.
"""

from __future__ import annotations

import os
from datetime import date
from pathlib import Path

import pytest

from copaw_context.core.archive.store import DialogArchive
from copaw_context.core.errors import ArchiveError
from copaw_context.core.memory._io import atomic_write
from copaw_context.core.memory.tools import MemoryTools
from copaw_context.core.toolresults.offload import OffloadStore
from copaw_context.core.workspace.confine import OutsideWorkspaceError
from tests.reliability.link_race import LinkRace, outside_files, swap_after_checks


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    return folder


def _race(workspace: Path, outside: Path, name: str) -> LinkRace:
    (workspace / name).mkdir(exist_ok=True)
    return LinkRace(workspace / name, outside)


def test_atomic_write_never_follows_a_folder_swapped_after_the_check(
    workspace: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    race = _race(workspace, outside, "memory")
    (race.folder / "MEMORY.md").write_bytes(b"# Memory\n- old\n")
    with swap_after_checks(monkeypatch, race), pytest.raises(OutsideWorkspaceError) as caught:
        atomic_write(race.folder / "MEMORY.md", b"# Memory\n- new\n", workspace)
    assert race.swaps > 0 and outside_files(outside) == {}
    assert str(race.folder) in str(caught.value) and "link" in str(caught.value)
    assert (race.folder / "MEMORY.md").read_bytes() == b"# Memory\n- old\n"


async def test_offloaded_output_never_follows_a_folder_swapped_after_the_check(
    workspace: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    race = _race(workspace, outside, "tool_result")
    store = OffloadStore(race.folder, 7, workspace=workspace)
    with swap_after_checks(monkeypatch, race), pytest.raises(OSError, match="link"):
        await store.save_parts(["the full tool output"])
    assert race.swaps > 0 and outside_files(outside) == {}
    saved = await store.save_parts(["the full tool output"])  # healthy again: written inside
    assert saved.path.parent == race.folder and saved.path.read_text() == "the full tool output"


async def test_archive_never_follows_a_folder_swapped_after_the_check(
    workspace: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    race = _race(workspace, outside, "dialog")
    archive = DialogArchive(race.folder, session_id="s", agent_name="a", workspace=workspace)
    message = {"role": "user", "content": "hello"}
    with swap_after_checks(monkeypatch, race), pytest.raises(ArchiveError, match="link"):
        await archive.append([message], [None], ["m1"])
    assert race.swaps > 0 and outside_files(outside) == {}
    written = await archive.append([message], [None], ["m1"])  # the caller kept it: retried
    assert [f.lines for f in written] == [1] and written[0].path.parent == race.folder


async def test_memory_tools_never_follow_a_folder_swapped_after_the_check(
    workspace: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    race = _race(workspace, outside, "memory")
    tools = MemoryTools.for_workspace(workspace)
    with swap_after_checks(monkeypatch, race):
        logged = await tools.memory_append_log("- did a thing")
        edited = await tools.memory_edit("Lessons", "- a lesson")
        searched = await tools.memory_search("thing")
    assert race.swaps > 0
    assert outside_files(outside) == {}, sorted(outside_files(outside))
    assert logged.startswith("Error") and "link" in logged, logged
    assert isinstance(edited, str) and isinstance(searched, str)
    today = race.folder / f"{date.today().isoformat()}.md"
    assert not today.exists() or "did a thing" not in today.read_text()


async def test_a_swap_after_any_one_check_never_sends_a_write_outside(
    workspace: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The swap placed after the 1st, 2nd, ... check of a memory log write, a MEMORY.md edit
    and an archive append in turn, until one runs with fewer checks than that."""
    archive = DialogArchive(
        workspace / "dialog", session_id="s", agent_name="a", workspace=workspace
    )
    tools = MemoryTools.for_workspace(workspace)
    writes = {
        "dialog": lambda k: archive.append([{"role": "user", "content": "hi"}], [None], [f"m{k}"]),
        "memory": lambda k: tools.memory_append_log(f"- note {k}"),
    }
    refused = 0
    for name, write in writes.items():
        (workspace / name).mkdir(exist_ok=True)
        for k in range(1, 40):
            race = LinkRace(workspace / name, outside, after_check=k)
            with swap_after_checks(monkeypatch, race):
                try:
                    answer = await write(k)
                except ArchiveError as error:
                    answer, refused = f"Error: {error}", refused + 1
            assert outside_files(outside) == {}, (name, k, sorted(outside_files(outside)))
            if isinstance(answer, str) and answer.startswith("Error"):
                assert "link" in answer, answer
            if race.swaps == 0:
                break
        else:
            raise AssertionError(f"{name}: more than 39 checks")
    assert refused > 0


async def test_cleanup_never_removes_files_through_a_folder_swapped_after_the_check(
    workspace: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Expired-looking files named like offloads in an outside folder survive a cleanup
    whose tool_result/ is swapped for a link to that folder right after the check."""
    race = _race(workspace, outside, "tool_result")
    victim = outside / f"{'a' * 32}.txt"
    victim.write_text("someone else's file")
    os.utime(victim, (1, 1))
    store = OffloadStore(race.folder, 0, workspace=workspace)
    with swap_after_checks(monkeypatch, race):
        removed = await store.cleanup()
    assert race.swaps > 0 and removed == [] and victim.read_text() == "someone else's file"


async def test_dump_history_never_follows_a_folder_swapped_after_the_check(
    workspace: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """/dump_history into dumps/: the folder swapped for a link right after the name check
    (placed in the dump's own check of the path) gets nothing, and the reply says why."""
    from copaw_context.core.commands import history
    from copaw_context.core.engine import ContextEngine
    from tests.fake_host import FakeHost, engine_config, user

    race = _race(workspace, outside, "dumps")
    real_inside = history._inside

    def inside_then_swap(*args: object) -> Path:
        path = real_inside(*args)  # type: ignore[arg-type]
        race.swap()
        return path

    monkeypatch.setattr(history, "_inside", inside_then_swap)
    engine = ContextEngine(engine_config(), workspace)
    reply = await engine.run_command(FakeHost([user("x")]), "dump_history", "dumps/sub/h.json")
    assert race.swaps == 1 and outside_files(outside) == {} and list(outside.iterdir()) == []
    assert reply.startswith("**Not dumped.**") and "link" in reply, reply


async def test_a_lock_file_linked_out_is_refused_naming_the_link(
    workspace: Path, outside: Path
) -> None:
    """A lock file of the memory log, MEMORY.md or the archive planted as a link to an outside
    file: refused, the file untouched, and the answer says which link leads where (the lock
    library alone says "too many levels of symbolic links")."""
    victim = outside / "precious.txt"
    victim.write_text("do not touch me")
    today = date.today().isoformat()
    locks = workspace / "memory" / ".locks"
    locks.mkdir(parents=True)
    (locks / f"{today}.md.lock").symlink_to(victim)
    (locks / "MEMORY.md.lock").symlink_to(victim)
    (workspace / "dialog").mkdir()
    (workspace / "dialog" / f"{today}.jsonl.lock").symlink_to(victim)
    tools = MemoryTools.for_workspace(workspace)
    archive = DialogArchive(
        workspace / "dialog", session_id="s", agent_name="a", workspace=workspace
    )
    answers = [await tools.memory_append_log("- a note"), await tools.memory_edit("L", "- x")]
    with pytest.raises(ArchiveError) as caught:
        await archive.append([{"role": "user", "content": "hi"}], [None], ["m1"])
    answers.append(str(caught.value))
    assert victim.read_text() == "do not touch me"
    for answer in answers:
        assert f"is a symbolic link to {victim}" in answer, answer
