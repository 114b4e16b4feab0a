"""The memory commands read the workspace's own agent.json when no --config is given (issue
22, item 4): QwenPaw keeps each agent's file in its workspace, with max_results, the daily
memory folder and the dialog folder of that agent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from copaw_context.cli import main


def qwenpaw_workspace(root: Path) -> Path:
    """A workspace whose agent.json moves the logs to ``daily/`` and the archive to
    ``chats/`` and allows 2 search results (QwenPaw's keys)."""
    workspace = root / "a1"
    (workspace / "daily").mkdir(parents=True)
    (workspace / "chats").mkdir()
    running = {
        "daily_memory_dir": "daily",
        "light_context_config": {"dialog_path": "chats"},
        "reme_light_memory_config": {"auto_memory_search_config": {"max_results": 2}},
    }
    (workspace / "agent.json").write_text(json.dumps({"running": running}), encoding="utf-8")
    lines = [f"- 10:{i:02d} [user] the staging deploy attempt {i} failed" for i in range(6)]
    (workspace / "daily" / "2024-05-01.md").write_text("\n".join(lines) + "\n", "utf-8")
    message = {"role": "user", "name": "user", "content": "the staging deploy needs a VPN"}
    (workspace / "chats" / "2024-05-01.jsonl").write_text(json.dumps(message) + "\n", "utf-8")
    return workspace


def test_search_uses_the_workspace_agent_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = qwenpaw_workspace(tmp_path)
    assert main(["memory", "search", "staging deploy", "--workspace", str(workspace)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("2 result(s) for 'staging deploy'")  # max_results 2, not 5
    assert "daily/2024-05-01.md" in out
    assert (workspace / "daily" / ".index.sqlite3").is_file()
    assert not (workspace / "memory").exists()


def test_search_finds_the_archive_in_the_configured_dialog_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = qwenpaw_workspace(tmp_path)
    assert main(["memory", "search", "VPN", "--workspace", str(workspace)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("1 result(s) for 'VPN'") and "chats/2024-05-01.jsonl" in out


def test_consolidate_uses_the_workspace_agent_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = qwenpaw_workspace(tmp_path)
    assert main(["memory", "consolidate", "--workspace", str(workspace)]) == 0
    assert "Folded 6 entries of 2024-05-01" in capsys.readouterr().out
    assert "attempt 5 failed" in (workspace / "MEMORY.md").read_text(encoding="utf-8")


def test_an_explicit_config_still_wins(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workspace = qwenpaw_workspace(tmp_path)
    other = tmp_path / "other.json"
    other.write_text('{"running": {"memory": {"search_max_results": 3}}}', encoding="utf-8")
    argv = ["memory", "search", "staging", "--workspace", str(workspace), "--config", str(other)]
    assert main(argv) == 0
    assert capsys.readouterr().out.startswith("No memory matches")  # memory/, dialog/: empty


def test_a_bad_workspace_agent_json_is_one_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = qwenpaw_workspace(tmp_path)
    (workspace / "agent.json").write_text('{"running": {"memory": {"enabled": 3}}}', "utf-8")
    assert main(["memory", "search", "staging", "--workspace", str(workspace)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("copaw-context: error: running.memory.enabled in ")
    assert str(workspace / "agent.json") in line
