"""Hostile memory files through the workspace's file store (issue 20): a consolidation record
nested too deep for the JSON decoder, a MEMORY.md saved with a byte order mark, one too large
to edit, and a MEMORY.md that is a FIFO or a folder. Each is met with a clear answer, never a
hang, a duplicate section or a failure on every later run."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

import pytest

from copaw_context.core.memory import MemoryConsolidator, MemoryFiles
from copaw_context.core.memory._checks import MAX_EDIT_BYTES
from copaw_context.core.memory._record import STATE_FILE
from copaw_context.core.memory.files import MemoryFileError
from copaw_context.core.memory.markdown import section_titles
from copaw_context.core.memory.tools import MemoryTools

NIGHT = datetime(2024, 5, 1, 23, 0).astimezone()


def _files(workspace: Path) -> MemoryFiles:
    return MemoryFiles(workspace, clock=lambda: NIGHT)


def _log(workspace: Path, text: str = "logged fact") -> None:
    log = workspace / "memory" / "2024-04-30.md"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(f"# 2024-04-30\n\n- 10:00 [agent] {text}\n", encoding="utf-8")


async def test_a_record_nested_too_deep_is_unreadable_and_replaced(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text("## Facts\n- old\n", encoding="utf-8")
    _log(tmp_path)
    record = tmp_path / "memory" / STATE_FILE
    record.write_bytes(b"[" * 100_000 + b"]" * 100_000)  # RecursionError in json.loads
    first = await MemoryConsolidator(_files(tmp_path)).consolidate()
    assert first.written and first.entries == 1
    assert json.loads(record.read_text(encoding="utf-8"))["logs"]["2024-04-30"]["bytes"] > 0
    again = await MemoryConsolidator(_files(tmp_path)).consolidate()
    assert not again.written and again.entries == 0  # the record holds: nothing folded twice
    assert (tmp_path / "MEMORY.md").read_text(encoding="utf-8").count("logged fact") == 1


async def test_a_byte_order_mark_does_not_hide_the_first_section(tmp_path: Path) -> None:
    memory = tmp_path / "MEMORY.md"
    memory.write_bytes(b"\xef\xbb\xbf## Prefs\r\n- tea\r\n")  # Notepad's UTF-8
    files = _files(tmp_path)
    assert (await files.render_for_prompt(4000)).startswith("## Prefs\n")
    backup = await files.edit_section("Prefs", "- green tea")
    text = memory.read_text(encoding="utf-8")
    assert section_titles(text) == ["Prefs"], text
    assert text == "## Prefs\n\n- tea\n- green tea\n"
    assert backup is not None and backup.read_bytes().startswith(b"\xef\xbb\xbf")  # as it was


async def test_a_memory_file_too_large_to_edit_is_refused_at_once(tmp_path: Path) -> None:
    memory = tmp_path / "MEMORY.md"
    huge = b"## Facts\n" + b"- a short fact\n" * (MAX_EDIT_BYTES // 15 + 10)
    memory.write_bytes(huge)
    files = _files(tmp_path)
    with pytest.raises(MemoryFileError, match=r"MEMORY\.md is \d+ bytes, over the \d+ an edit"):
        await files.edit_section("Facts", "- one more")
    assert memory.read_bytes() == huge and not files.backups_dir.exists()
    prompt = await files.render_for_prompt(4000)  # still shown, cut to the budget
    assert prompt.startswith("## Facts\n") and len(prompt.encode("utf-8")) <= 4000
    _log(tmp_path)
    with pytest.raises(MemoryFileError, match="over the"):
        await MemoryConsolidator(files).consolidate()  # no merge of minutes either
    assert memory.read_bytes() == huge
    await files.write_memory("## Facts\n- kept short\n")  # a whole new text is allowed
    assert memory.read_text(encoding="utf-8") == "## Facts\n- kept short\n"


@pytest.mark.parametrize("kind", ["fifo", "folder"])
async def test_a_memory_file_that_is_no_file_is_named_for_what_it_is(
    tmp_path: Path, kind: str
) -> None:
    memory = tmp_path / "MEMORY.md"
    if kind == "fifo":
        os.mkfifo(memory)
    else:
        memory.mkdir()
    files = _files(tmp_path)
    assert await files.render_for_prompt(4000) == ""  # never blocks, never fails the turn
    tools = MemoryTools.for_workspace(tmp_path)
    answer = await tools.memory_edit("Facts", "- a fact")
    assert answer.startswith("Error: could not edit MEMORY.md: "), answer
    assert "not a regular file" in answer and "Remove or rename" in answer, answer
    assert "link" not in answer and "outside the workspace" not in answer, answer
    _log(tmp_path)
    (tmp_path / "memory" / STATE_FILE).mkdir()
    with pytest.raises(OSError, match="not a regular file") as caught:
        await MemoryConsolidator(files).consolidate()
    assert "link" not in str(caught.value)
