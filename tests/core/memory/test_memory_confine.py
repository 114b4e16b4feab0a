"""Memory files and the index never follow links out of the workspace (issue 17 item 13)."""

from __future__ import annotations

import os
from datetime import date
from pathlib import Path

import pytest

from copaw_context.core.memory.files import MemoryFiles
from copaw_context.core.memory.tools import MemoryTools
from copaw_context.core.workspace.confine import OutsideWorkspaceError

SECRET = "OUTSIDE-SECRET-7f3a"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.md").write_text(f"# s\n\n- {SECRET}\n", encoding="utf-8")
    (folder / f"{date.today().isoformat()}.md").write_text(f"- {SECRET}\n", encoding="utf-8")
    return folder


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


async def test_memory_md_link_to_outside_is_not_read_nor_written(
    workspace: Path, outside: Path
) -> None:
    (workspace / "MEMORY.md").symlink_to(outside / "secret.md")
    before = _snapshot(outside)
    files = MemoryFiles(workspace)
    assert await files.render_for_prompt(4000) == ""
    with pytest.raises(OutsideWorkspaceError, match="outside the workspace"):
        files.read_memory_sync()
    tools = MemoryTools.for_workspace(workspace)
    answer = await tools.memory_edit("Lessons", "- x")
    assert answer.startswith("Error") and "outside the workspace" in answer
    assert SECRET not in await tools.memory_search("OUTSIDE")
    assert _snapshot(outside) == before


async def test_memory_dir_link_to_outside_refuses_log_and_search(
    workspace: Path, outside: Path
) -> None:
    (workspace / "memory").symlink_to(outside, target_is_directory=True)
    before = _snapshot(outside)
    tools = MemoryTools.for_workspace(workspace)
    answer = await tools.memory_append_log("- did a thing")
    assert answer.startswith("Error") and "outside the workspace" in answer
    assert SECRET not in await tools.memory_search("OUTSIDE")
    assert _snapshot(outside) == before


async def test_daily_log_link_and_hardlink_are_refused(workspace: Path, outside: Path) -> None:
    memory = workspace / "memory"
    memory.mkdir()
    today = f"{date.today().isoformat()}.md"
    (memory / today).symlink_to(outside / today)
    before = _snapshot(outside)
    tools = MemoryTools.for_workspace(workspace)
    answer = await tools.memory_append_log("- note")
    assert answer.startswith("Error"), answer
    assert SECRET not in await tools.memory_search("OUTSIDE")
    (memory / today).unlink()
    os.link(outside / today, memory / today)
    answer = await tools.memory_append_log("- note")
    assert answer.startswith("Error") and "hard link" in answer, answer
    assert _snapshot(outside) == before


async def test_index_db_link_to_outside_is_refused(workspace: Path, outside: Path) -> None:
    memory = workspace / "memory"
    memory.mkdir()
    tools = MemoryTools.for_workspace(workspace)
    (memory / tools.index.path.name).symlink_to(outside / "index.db")
    answer = await tools.memory_search("anything")
    assert answer.startswith("Error") and "outside the workspace" in answer, answer
    assert not (outside / "index.db").exists()


async def test_extra_read_roots_are_read_never_written(workspace: Path, outside: Path) -> None:
    (workspace / "MEMORY.md").symlink_to(outside / "secret.md")
    before = _snapshot(outside)
    tools = MemoryTools.for_workspace(workspace, extra_read_roots=[outside])
    assert SECRET in await tools.files.render_for_prompt(4000)
    assert SECRET in await tools.memory_search("OUTSIDE")
    answer = await tools.memory_edit("Lessons", "- x")
    assert _snapshot(outside) == before
    assert not answer.startswith("Added") or not (workspace / "MEMORY.md").is_symlink()
