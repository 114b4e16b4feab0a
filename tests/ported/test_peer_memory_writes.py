"""Peer cases of memory-file writes, ported to MEMORY.md through the workspace's file store
(issue 20): the first memory written to an existing empty file (no backup of nothing), and a
write that fails part way (here: its backup cannot be made, a file where the backups folder
goes) leaving the old file byte for byte and no temp file behind, the next write working once
the cause is gone. After the memory-file manager tests of game-agent memories (first write
to an empty file; backup and atomic replace) and a memory store's save/load lock tests."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from copaw_context.core.memory import MemoryFiles

NOON = datetime(2024, 5, 1, 12, 0).astimezone()


def _files(workspace: Path) -> MemoryFiles:
    return MemoryFiles(workspace, clock=lambda: NOON)


def _leftovers(workspace: Path) -> list[str]:
    return sorted(str(p.relative_to(workspace)) for p in workspace.rglob("*.tmp"))


@pytest.mark.parametrize("empty", [b"", b"\n\n  \n"])
async def test_the_first_memory_in_an_empty_file_makes_no_backup(
    tmp_path: Path, empty: bytes
) -> None:
    (tmp_path / "MEMORY.md").write_bytes(empty)
    files = _files(tmp_path)
    assert await files.edit_section("Preferences", "- dark mode") is None
    text = (tmp_path / "MEMORY.md").read_text(encoding="utf-8")
    assert text.endswith("\n") and text.strip() == "## Preferences\n\n- dark mode"
    assert not files.backups_dir.exists() and _leftovers(tmp_path) == []


async def test_a_write_whose_backup_fails_leaves_the_old_file_whole(tmp_path: Path) -> None:
    memory = tmp_path / "MEMORY.md"
    memory.write_bytes(b"## Preferences\r\n- tea\r\n")  # odd bytes: kept exactly as they are
    files = _files(tmp_path)
    files.memory_dir.mkdir()
    files.backups_dir.write_text("a file where the backups folder goes", encoding="utf-8")
    with pytest.raises(OSError):
        await files.edit_section("Preferences", "- coffee")
    assert memory.read_bytes() == b"## Preferences\r\n- tea\r\n"
    assert _leftovers(tmp_path) == []
    files.backups_dir.unlink()
    backup = await files.edit_section("Preferences", "- coffee")
    assert backup is not None and backup.read_bytes() == b"## Preferences\r\n- tea\r\n"
    assert memory.read_text(encoding="utf-8") == "## Preferences\n\n- tea\n- coffee\n"
