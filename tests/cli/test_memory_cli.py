"""copaw-context memory consolidate / search."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from copaw_context.cli import main


def workspace_with_memory(tmp_path: Path, memory_dir: str = "memory") -> Path:
    log = tmp_path / memory_dir / "2024-05-01.md"
    log.parent.mkdir(parents=True)
    log.write_text("# 2024-05-01\n\n- 10:00 [agent] 用户喜欢 PostgreSQL 数据库\n", encoding="utf-8")
    archive = tmp_path / "dialog" / "2024-05-01.jsonl"
    archive.parent.mkdir()
    message = {"role": "user", "name": "user", "content": "deploy to the staging cluster"}
    archive.write_text(json.dumps(message) + "\n", encoding="utf-8")
    return tmp_path


def test_consolidate_folds_the_logs_extractively(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = workspace_with_memory(tmp_path)
    (workspace / "MEMORY.md").write_text("## Preferences\n\n- tea\n", encoding="utf-8")
    assert main(["memory", "consolidate", "--workspace", str(workspace)]) == 0
    out = capsys.readouterr().out
    assert "Folded 1 entry of 2024-05-01 into" in out and "(extractive)" in out
    assert "Backup of the previous MEMORY.md:" in out
    assert "- 用户喜欢 PostgreSQL 数据库" in (workspace / "MEMORY.md").read_text(encoding="utf-8")
    assert main(["memory", "consolidate", "--workspace", str(workspace)]) == 0
    assert "Nothing new to fold" in capsys.readouterr().out


def test_consolidate_uses_the_config_memory_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = workspace_with_memory(tmp_path, "notes")
    config = tmp_path / "agent.json"
    config.write_text(json.dumps({"running": {"daily_memory_dir": "notes"}}), encoding="utf-8")
    args = ["memory", "consolidate", "--workspace", str(workspace), "--config", str(config)]
    assert main(args) == 0
    assert "Folded 1 entry" in capsys.readouterr().out


def test_search_prints_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workspace = workspace_with_memory(tmp_path)
    assert main(["memory", "search", "数据库", "--workspace", str(workspace)]) == 0
    out = capsys.readouterr().out
    assert "1. memory/2024-05-01.md line 3" in out and "read_file" not in out
    assert f"(paths are relative to {workspace})" in out
    assert main(["memory", "search", "staging", "--workspace", str(workspace), "--limit", "1"]) == 0
    assert "dialog/2024-05-01.jsonl line 1 (user)" in capsys.readouterr().out
    assert main(["memory", "search", "nothing-here", "--workspace", str(workspace)]) == 0
    assert "No memory matches" in capsys.readouterr().out


def test_search_ranks_a_question_as_memory_search_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = workspace_with_memory(tmp_path)
    archive = workspace / "dialog" / "2024-05-01.jsonl"
    noise = {"role": "user", "name": "user", "content": "which cluster is the worst one"}
    with archive.open("a", encoding="utf-8") as handle:
        handle.writelines(json.dumps(noise) + "\n" for _ in range(5))
    question = ["memory", "search", "Which clusters did we deploy to?", "--workspace"]
    assert main([*question, str(workspace)]) == 0
    assert "1. dialog/2024-05-01.jsonl line 1 (user)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["memory", "search", "x", "--workspace", "{missing}"], "no such directory"),
        (["memory", "search", "x", "--workspace", "{ws}", "--limit", "0"], "--limit"),
        (["memory", "search", "  ", "--workspace", "{ws}"], "query is empty"),
        (["memory", "consolidate", "--workspace", "{ws}", "--config", "{missing}"], "no such file"),
    ],
)
def test_bad_usage_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], words: str
) -> None:
    filled = [a.format(ws=tmp_path, missing=tmp_path / "missing") for a in args]
    assert main(filled) == 2
    assert words in capsys.readouterr().err


def test_a_runtime_failure_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workspace = workspace_with_memory(tmp_path)
    unreadable = workspace / "memory" / ".consolidated.json"
    unreadable.mkdir()  # the state cannot be written: a runtime failure, not a usage error
    assert main(["memory", "consolidate", "--workspace", str(workspace)]) == 1
    assert "consolidation failed: " in capsys.readouterr().err


def test_help_says_the_command_line_merges_extractively(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["memory", "consolidate", "--help"]) == 0
    assert "extractively" in capsys.readouterr().out
    assert main(["memory"]) == 2


def test_an_index_that_cannot_be_written_says_the_workspace_must_be_writable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    connect = sqlite3.connect

    def read_only(target: str, *args: object, **kwargs: object) -> sqlite3.Connection:
        if target == ":memory:":  # the FTS5 probe
            return connect(target)
        raise sqlite3.OperationalError("unable to open database file")  # a read-only folder

    monkeypatch.setattr(sqlite3, "connect", read_only)
    assert main(["memory", "search", "parser", "--workspace", str(tmp_path)]) == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("copaw-context: error: search failed: "), last
    assert f"the workspace {tmp_path} must be writable" in last


def test_search_takes_several_words_without_quotes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    quoted = main(["memory", "search", "parser build", "--workspace", str(tmp_path)])
    first = capsys.readouterr()
    unquoted = main(["memory", "search", "parser", "build", "--workspace", str(tmp_path)])
    second = capsys.readouterr()
    assert quoted == unquoted == 0 and first.out == second.out, second.err
