"""The recall index: hits in English and Chinese with file and line, incremental indexing of the
archive, rebuilds, QwenPaw's archive lines, concurrency, the LIKE fallback and the search tool."""

from __future__ import annotations

import json
import logging
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import copaw_context
from copaw_context.core.memory import MemoryFiles, MemoryIndex, MemoryTools, SearchHit
from copaw_context.core.memory.search import INDEX_FILE


def ours(text: str, role: str = "user", **block: Any) -> dict[str, Any]:
    content = [block] if block else [{"type": "text", "text": text, "id": "b1"}]
    return {
        "session_id": "s1",
        "archive_id": "a1",
        "form": "agentscope2.Msg",
        "agent_name": "friday",
        "archived_at": "2024-05-01T10:00:00+08:00",
        "timestamp": "2024-05-01T09:00:00+08:00",
        "message": {"name": role, "role": role, "content": content, "id": "m1"},
    }


def qwenpaw(content: Any, role: str = "assistant") -> dict[str, Any]:
    return {"id": "q", "name": role, "role": role, "content": content, "timestamp": "2024-05-01"}


def write_lines(path: Path, records: list[dict[str, Any]], mode: str = "a") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open(mode, encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def line_of(workspace: Path, hit: SearchHit) -> str:
    return (workspace / hit.path).read_text(encoding="utf-8").split("\n")[hit.line - 1]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "MEMORY.md").write_text(
        "# Memory\n\n## Preferences\n\n- User prefers pnpm over npm.\n- 用户习惯用 PostgreSQL。\n",
        encoding="utf-8",
    )
    log = tmp_path / "memory" / "2024-05-01.md"
    log.parent.mkdir()
    log.write_text(
        "# 2024-05-01\n\n- 09:10 [agent] Deployed the staging cluster\n", encoding="utf-8"
    )
    write_lines(
        tmp_path / "dialog" / "2024-05-01.jsonl",
        [
            ours("Hello there"),
            ours("请帮我把数据库迁移到新的服务器上"),
            ours("", "assistant", type="tool_call", id="c1", name="shell", input='{"cmd": "ls"}'),
        ],
    )
    return tmp_path


async def test_hits_in_english_and_chinese_name_file_and_line(workspace: Path) -> None:
    index = MemoryIndex(workspace)
    (hit,) = await index.search("数据库")
    assert (hit.path, hit.line, hit.kind) == ("dialog/2024-05-01.jsonl", 2, "dialog")
    assert "数据库" in hit.snippet and "数据库" in line_of(workspace, hit)
    assert hit.label == "user" and hit.stamp.startswith("2024-05-01T09:00")
    (hit,) = await index.search("PNPM")
    assert (hit.path, hit.line, hit.kind, hit.label) == ("MEMORY.md", 5, "memory", "Preferences")
    assert "pnpm" in line_of(workspace, hit)
    (hit,) = await index.search("staging cluster")
    assert (hit.path, hit.line, hit.kind) == ("memory/2024-05-01.md", 3, "log")
    (hit,) = await index.search("shell")
    assert hit.snippet.startswith("[tool call shell]")
    assert await index.search("nothing like this") == []


async def test_short_words_and_any_word_matches(workspace: Path) -> None:
    index = MemoryIndex(workspace)
    assert [h.line for h in await index.search("数据")] == [2]  # 2 characters: a scan
    hits = await index.search("pnpm 服务器")  # no chunk has both: either word
    assert {h.path for h in hits} == {"MEMORY.md", "dialog/2024-05-01.jsonl"}
    assert [h.line for h in await index.search("pnpm", limit=1)] == [5]
    with pytest.raises(ValueError, match="empty"):
        await index.search('  " ')
    with pytest.raises(ValueError, match="limit"):
        await index.search("pnpm", limit=0)


async def test_qwenpaw_archive_lines_are_indexed(tmp_path: Path) -> None:
    write_lines(
        tmp_path / "dialog" / "2024-04-30.jsonl",
        [
            qwenpaw("plain string content about kubernetes", role="user"),
            qwenpaw([{"type": "tool_use", "id": "t", "name": "run", "input": {"cmd": "make"}}]),
            qwenpaw(
                [
                    {
                        "type": "tool_result",
                        "id": "t",
                        "name": "run",
                        "output": [{"type": "text", "text": "链接错误: undefined symbol"}],
                    }
                ],
                role="system",
            ),
            qwenpaw([{"type": "thinking", "thinking": "secret musing"}]),
        ],
    )
    index = MemoryIndex(tmp_path)
    assert [h.line for h in await index.search("kubernetes")] == [1]
    (call,) = await index.search('"cmd": "make"')
    assert call.line == 2 and "[tool call run]" in call.snippet
    (result,) = await index.search("链接错误")
    assert result.line == 3 and result.label == "system"
    assert await index.search("musing") == []  # thinking is not indexed


async def test_appended_lines_are_indexed_incrementally(workspace: Path) -> None:
    index = MemoryIndex(workspace)
    first = await index.refresh()
    assert first.files_indexed == 3 and not first.rebuilt
    assert (await index.refresh()).files_indexed == 0  # nothing changed
    archive = workspace / "dialog" / "2024-05-01.jsonl"
    write_lines(archive, [ours("the answer is 42 giraffes")])
    stats = await index.refresh()
    assert (stats.files_indexed, stats.chunks_added) == (1, 1)
    (hit,) = await index.search("giraffes")
    assert hit.line == 4
    with archive.open("a", encoding="utf-8") as handle:  # a line still being written
        handle.write(json.dumps(ours("torn zebras"))[:40])
    assert await index.search("zebras") == []
    with archive.open("a", encoding="utf-8") as handle:
        handle.write("\n")
    write_lines(archive, [ours("complete zebras")])
    (hit,) = await index.search("zebras")
    assert hit.line == 6  # the torn line 5 is skipped, numbering goes on
    with sqlite3.connect(index.path) as conn:
        count = conn.execute("SELECT count(*) FROM chunks WHERE path LIKE 'dialog/%'").fetchone()
    assert count[0] == 5  # each line once


async def test_changed_rewritten_and_deleted_files_are_reindexed(workspace: Path) -> None:
    index = MemoryIndex(workspace)
    await index.refresh()
    memory = workspace / "MEMORY.md"
    memory.write_text("## Preferences\n\n- User prefers yarn now.\n", encoding="utf-8")
    assert await index.search("pnpm") == []
    assert [h.line for h in await index.search("yarn")] == [3]
    archive = workspace / "dialog" / "2024-05-01.jsonl"
    write_lines(archive, [ours("only line left")], mode="w")  # rewritten, shorter
    assert await index.search("数据库") == []
    assert [h.line for h in await index.search("only line left")] == [1]
    (workspace / "memory" / "2024-05-01.md").unlink()
    stats = await index.refresh()
    assert stats.files_dropped == 1
    assert await index.search("staging") == []


async def test_index_is_rebuilt_after_deletion_or_corruption(
    workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    index = MemoryIndex(workspace)
    await index.refresh()
    index.path.unlink()
    for suffix in ("-wal", "-shm"):
        Path(f"{index.path}{suffix}").unlink(missing_ok=True)
    assert [h.line for h in await index.search("数据库")] == [2]
    index.path.write_bytes(b"this is not an sqlite database at all" * 100)
    for suffix in ("-wal", "-shm"):
        Path(f"{index.path}{suffix}").unlink(missing_ok=True)
    with caplog.at_level(logging.WARNING, logger="copaw_context"):
        assert [h.line for h in await index.search("数据库")] == [2]
    assert "rebuilding" in caplog.text
    assert (index.path.parent / f"{INDEX_FILE}.corrupt").exists()
    with sqlite3.connect(index.path) as conn:  # a foreign schema version
        conn.execute("PRAGMA user_version = 99")
    assert [h.line for h in await index.search("pnpm")] == [5]
    stats = await index.rebuild()
    assert stats.rebuilt and stats.files_indexed == 3


async def test_like_fallback_finds_the_same(workspace: Path) -> None:
    index = MemoryIndex(workspace, use_fts=False)
    assert not index.uses_fts
    assert [h.line for h in await index.search("数据库")] == [2]
    assert [h.line for h in await index.search("pnpm")] == [5]
    assert [h.line for h in await index.search("100%")] == []  # LIKE wildcards are literal


def test_two_threads_indexing_at_once_index_each_line_once(workspace: Path) -> None:
    archive = workspace / "dialog" / "2024-05-02.jsonl"
    write_lines(archive, [ours(f"message number {n} about otters") for n in range(300)])
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def index_it() -> None:
        try:
            barrier.wait()
            MemoryIndex(workspace).refresh_sync()
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=index_it) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    index = MemoryIndex(workspace)
    with sqlite3.connect(index.path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        rows = conn.execute(
            "SELECT line, count(*) FROM chunks WHERE path = 'dialog/2024-05-02.jsonl' GROUP BY line"
        ).fetchall()
    assert len(rows) == 300 and {count for _, count in rows} == {1}


def test_two_processes_indexing_at_once_do_not_corrupt_it(workspace: Path) -> None:
    write_lines(
        workspace / "dialog" / "2024-05-03.jsonl",
        [ours(f"line {n} 关于水獭的消息") for n in range(500)],
    )
    package = Path(copaw_context.__file__).parent
    script = (
        "import sys, types\n"
        f"package = types.ModuleType('copaw_context'); package.__path__ = [{str(package)!r}]\n"
        "sys.modules['copaw_context'] = package\n"
        "from copaw_context.core.memory.search import MemoryIndex\n"
        "for _ in range(3):\n"
        "    MemoryIndex(sys.argv[1]).refresh_sync()\n"
    )
    processes = [subprocess.Popen([sys.executable, "-c", script, str(workspace)]) for _ in range(2)]
    assert [p.wait(timeout=120) for p in processes] == [0, 0]
    index = MemoryIndex(workspace)
    with sqlite3.connect(index.path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        (count,) = conn.execute(
            "SELECT count(*) FROM chunks WHERE path = 'dialog/2024-05-03.jsonl'"
        ).fetchone()
    assert count == 500
    assert len(index.search_sync("水獭", 50)) == 50


async def test_memory_search_tool_text(workspace: Path) -> None:
    tools = MemoryTools(MemoryFiles(workspace), MemoryIndex(workspace), max_results=2)
    text = await tools.memory_search("数据库")
    assert text.startswith("1 result(s) for '数据库'")
    assert "1. dialog/2024-05-01.jsonl line 2 (user, 2024-05-01T09:00:00+08:00):" in text
    assert (
        '   from an archived message (its JSON line); read_file(file_path="dialog/2024-05-01.jsonl"'
        ", start_line=2)" in text
    )
    many = await tools.memory_search("e", limit=10)  # capped by max_results
    assert many.startswith("2 result(s)")
    assert (await tools.memory_search("zzzqqq")).startswith("No memory matches 'zzzqqq'")
    assert await tools.memory_search("") == (
        "Error: the query is empty; give one or more words to look for."
    )
    assert (await tools.memory_search("x", limit=0)).startswith("Error: limit must be at least 1")
    assert (await tools.memory_search("x", limit="3")).startswith(  # type: ignore[arg-type]
        "Error: limit must be a whole number"
    )


async def test_a_large_archive_is_indexed_in_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from copaw_context.core.memory import _index_files

    monkeypatch.setattr(_index_files, "_STEP_BYTES", 300)
    records = [ours(f"short {n} pelican") for n in range(10)]
    records.insert(4, ours("a very long line about pelicans " + "x" * 2000))
    write_lines(tmp_path / "dialog" / "2024-05-01.jsonl", records)
    index = MemoryIndex(tmp_path)
    stats = await index.refresh()
    assert stats.files_indexed == 1 and stats.chunks_added == 11
    hits = await index.search("pelican", limit=20)
    assert sorted(h.line for h in hits) == list(range(1, 12))
    (long_hit,) = await index.search("very long line")
    assert long_hit.line == 5


@pytest.fixture(scope="module")
def shared_index(tmp_path_factory: pytest.TempPathFactory) -> MemoryIndex:
    workspace = tmp_path_factory.mktemp("shared")
    text = '## Facts\n\n- 数据 (a) "quoted" 100%_x\n'
    (workspace / "MEMORY.md").write_text(text, encoding="utf-8")
    index = MemoryIndex(workspace)
    index.refresh_sync()
    return index


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet='ab"*^()-+:{}[]%_\\\x00 数据\n\tNEAROR', max_size=14))
def test_any_query_text_is_searched_literally(shared_index: MemoryIndex, query: str) -> None:
    words = query.replace('"', " ").replace("\x00", " ").split()
    if not words:
        with pytest.raises(ValueError, match="empty"):
            shared_index.search_sync(query, 5, refresh=False)
        return
    for hit in shared_index.search_sync(query, 5, refresh=False):
        folded = hit.snippet.casefold()
        assert any(word.casefold() in folded for word in words)
