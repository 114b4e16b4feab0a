"""The command line next to AgentScope 1.x: config and memory commands work, the 2.x-only
demo and chat say why they cannot run."""

from __future__ import annotations

from pathlib import Path

import pytest

from copaw_context.cli import main


def test_check_config_works(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "agent.json"
    path.write_text('{"running": {"max_input_length": 64000}}', encoding="utf-8")
    assert main(["check-config", str(path)]) == 0
    assert "64000" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [["demo"], ["chat", "--config", "x.json", "--model", "m"]])
def test_demo_and_chat_explain_they_need_agentscope_2(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert "runs an AgentScope 2.x agent and AgentScope 1.0." in error
    assert "Attach it to an AgentScope 1.x ReActAgent" in error
