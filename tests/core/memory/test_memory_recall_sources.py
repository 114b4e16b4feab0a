"""Recall over everything that left the context (issue 22 item 4): the saved full texts of cut
tool outputs and user requests, and the summaries ``/clear`` and ``/new`` removed. Each hit
names its file, the line of the match and the ``read_file`` call that reads on from there;
indexing is incremental, capped per file, never through a link, and an expired output leaves
the index."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from copaw_context.core.events import CompactionRecord
from copaw_context.core.memory import MemoryFiles, MemoryIndex, MemoryTools, keep_cleared_summary
from copaw_context.core.memory._extract import text_chunks
from copaw_context.core.toolresults.offload import OffloadStore
from copaw_context.core.tools.file_reader import read_text_file
from copaw_context.testing import ManualClock


def _log(marker_line: int, marker: str, lines: int = 400) -> str:
    rows = [f"step {n}: compiling unit_{n}.c ok" for n in range(1, lines + 1)]
    rows[marker_line - 1] = marker
    return "\n".join(rows) + "\n"


def _save(workspace: Path, text: str, folder: str = "tool_result") -> Path:
    path = workspace / folder / f"{uuid.uuid4().hex}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _line(path: Path, number: int) -> str:
    return path.read_text(encoding="utf-8").split("\n")[number - 1]


async def test_a_saved_tool_output_is_found_at_its_line_in_english_and_chinese(
    tmp_path: Path,
) -> None:
    text = _log(277, "ld: error: undefined symbol: zq_init_4711")
    text = text.replace("step 333: compiling unit_333.c ok", "链接器错误：找不到符号 西风初始化")
    saved = _save(tmp_path, text)
    index = MemoryIndex(tmp_path)
    (hit,) = await index.search("zq_init_4711")
    assert (hit.path, hit.kind, hit.line) == (f"tool_result/{saved.name}", "output", 277)
    assert "zq_init_4711" in hit.snippet and "zq_init_4711" in _line(saved, hit.line)
    (hit,) = await index.search("找不到符号")
    assert hit.line == 333 and "西风初始化" in _line(saved, hit.line)
    # The read_file call the hit names reads the matched line first.
    read = await read_text_file(hit.path, start_line=hit.line, workspace=tmp_path)
    assert read.ok and read.text.startswith("链接器错误")


async def test_the_tool_text_names_the_source_and_the_read_file_call(tmp_path: Path) -> None:
    saved = _save(tmp_path, _log(12, "Traceback: KeyError 'tenant_zx9'"))
    tools = MemoryTools(MemoryFiles(tmp_path), MemoryIndex(tmp_path))
    text = await tools.memory_search("tenant_zx9")
    assert f"1. tool_result/{saved.name} line 12: " in text
    assert (
        "   from the full text of a cut tool output; "
        f'read_file(file_path="tool_result/{saved.name}", start_line=12)'
    ) in text


async def test_a_cut_user_request_is_found(tmp_path: Path) -> None:
    saved = _save(
        tmp_path, "please migrate\n" * 50 + "the orders table to ledger_v7\n", "dialog/requests"
    )
    (hit,) = await MemoryIndex(tmp_path).search("ledger_v7")
    assert (hit.path, hit.kind, hit.line) == (f"dialog/requests/{saved.name}", "request", 51)


async def test_only_the_first_bytes_of_a_large_output_are_indexed(tmp_path: Path) -> None:
    text = _log(10, "early marker alpha_early") + "x" * 5000 + "\nlate marker omega_late\n"
    _save(tmp_path, text)
    index = MemoryIndex(tmp_path, max_output_bytes=4096)
    assert len(await index.search("alpha_early")) == 1
    assert await index.search("omega_late") == []
    assert await MemoryIndex(tmp_path, tool_results_dir=None).search("alpha_early") == []


async def test_indexing_is_incremental_and_a_kept_file_touched_is_not_indexed_again(
    tmp_path: Path,
) -> None:
    first = _save(tmp_path, _log(5, "first output beta_1"))
    index = MemoryIndex(tmp_path)
    stats = await index.refresh()
    assert stats.files_indexed == 1
    assert (await index.refresh()).files_indexed == 0
    os.utime(first, (1, 1))  # a cleanup keeping a named file touches it
    assert (await index.refresh()).files_indexed == 0
    _save(tmp_path, _log(5, "second output beta_2"))
    assert (await index.refresh()).files_indexed == 1
    rewritten = first.with_name(".tmp")
    rewritten.write_text(_log(8, "rewritten gamma_3"), encoding="utf-8")
    os.replace(rewritten, first)  # a new inode: indexed again
    assert (await index.refresh()).files_indexed == 1
    assert await index.search("beta_1") == []
    assert (await index.search("gamma_3"))[0].line == 8


async def test_an_expired_output_leaves_the_index(tmp_path: Path) -> None:
    clock = ManualClock(1_000_000.0)
    store = OffloadStore(
        tmp_path / "tool_result", retention_days=1, workspace=tmp_path, clock=clock
    )
    saved = await store.save(_log(3, "expiring delta_44"))
    os.utime(saved, (clock.now, clock.now))
    index = MemoryIndex(tmp_path)
    assert len(await index.search("delta_44")) == 1
    clock.advance(2 * 86400)
    assert await store.cleanup() == [saved]
    assert await index.search("delta_44") == []
    assert (await index.refresh()).files_dropped == 0  # dropped by the search's refresh


async def test_links_hard_links_and_foreign_names_are_never_read(tmp_path: Path) -> None:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_text("outside marker epsilon_secret\n", encoding="utf-8")
    cache = workspace / "tool_result"
    cache.mkdir(parents=True)
    (cache / f"{uuid.uuid4().hex}.txt").symlink_to(secret)
    os.link(secret, cache / f"{uuid.uuid4().hex}.txt")
    (cache / "notes.txt").write_text("epsilon_secret in a foreign name\n", encoding="utf-8")
    (workspace / "dialog").mkdir()
    (workspace / "dialog" / "requests").symlink_to(outside, target_is_directory=True)
    assert await MemoryIndex(workspace).search("epsilon_secret") == []
    other = tmp_path / "ws2"
    other.mkdir()
    (other / "tool_result").symlink_to(outside, target_is_directory=True)
    os.replace(secret, outside / f"{uuid.uuid4().hex}.txt")
    assert await MemoryIndex(other).search("epsilon_secret") == []


async def test_a_cleared_summary_is_kept_and_found_whole(tmp_path: Path) -> None:
    summary = (
        "## Goal\n- Deploy project Zephyr-88 to staging\n\n## 约束与偏好\n- 部署前先备份数据库\n"
    )
    for trigger in ("clear", "new"):
        record = CompactionRecord(trigger, "s1", "friday", (), summary)
        path = await keep_cleared_summary(record, tmp_path, "dialog", clock=lambda: 86400.0 * 20000)
        assert path == tmp_path / "dialog" / "summaries" / "2024-10-04.md"
    assert (
        await keep_cleared_summary(
            CompactionRecord("auto", "s", "a", (), summary), tmp_path, "dialog"
        )
        is None
    )
    assert (
        await keep_cleared_summary(
            CompactionRecord("clear", "s", "a", (), None), tmp_path, "dialog"
        )
        is None
    )
    index = MemoryIndex(tmp_path)
    hits = await index.search("Zephyr-88", limit=5)
    assert [(h.kind, h.line) for h in hits] == [("summary", 9), ("summary", 1)]
    assert hits[1].label == "/clear summary: Goal" and hits[1].stamp.startswith("2024-10-04T00:00")
    (zh, _) = await index.search("备份数据库")
    assert zh.label == "/new summary: 约束与偏好"
    read = await read_text_file(zh.path, start_line=zh.line, workspace=tmp_path)
    assert read.text.startswith("# /new · 2024-10-04T00:00:00+00:00 · session s1 · agent friday")
    assert "部署前先备份数据库" in read.text and "/clear ·" not in read.text.split("\n", 1)[1][:200]


async def test_a_summary_line_like_an_entry_stays_body_text(tmp_path: Path) -> None:
    record = CompactionRecord("clear", "s 1·x", "a", (), "- note\n# /clear · fake entry\n")
    path = await keep_cleared_summary(record, tmp_path, "dialog")
    assert path is not None
    text = path.read_text(encoding="utf-8")
    assert text.count("\n# /clear · ") == 0 and "session s 1 x · agent a" in text
    (hit,) = await MemoryIndex(tmp_path).search("fake entry")
    assert hit.line == 1


@pytest.mark.parametrize("lines", [1, 39, 40, 41, 200])
def test_text_chunks_keep_every_line_at_its_number(lines: int) -> None:
    text = "\n".join(f"line {n}" if n % 7 else "" for n in range(1, lines + 1))
    for chunk in text_chunks(text, max_chars=100):
        first = chunk.body.split("\n", 1)[0]
        assert first == f"line {chunk.line}"
