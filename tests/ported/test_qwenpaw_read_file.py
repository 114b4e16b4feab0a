"""Ports QwenPaw's read_file argument cases: start_line / end_line / line_offset given as
strings ("2", "2.0"; AgentScope 1.x passes them through) read the right lines, and seven
bad-argument forms give a clear "Error: ..." text, never a traceback or an empty result."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ported.kit import play
from tests.reliability.drivers import HostDriver


def _read(driver: HostDriver, workspace: Path, content: str, args: dict[str, object]) -> str:
    """One read_file call on ``notes.txt`` (holding ``content``); the text the model saw."""
    (workspace / "notes.txt").write_text(content, encoding="utf-8")
    call = ("read_file", {"file_path": "notes.txt", **args}, None)
    run = play(driver, workspace, 16000, [("read", [("tools", [call]), ("text", "done")])])
    assert run.replies == ["done"]
    assert not run.problems, run.problems
    return run.tool_texts()[0]


@pytest.mark.parametrize(
    "args",
    [
        {"start_line": "2", "end_line": "3"},
        {"start_line": 2, "end_line": "3"},
        {"start_line": "2.0", "end_line": 3},
    ],
)
def test_qp_read_file_string_lines(
    driver: HostDriver, tmp_path: Path, args: dict[str, object]
) -> None:
    shown = _read(driver, tmp_path, "one\ntwo\nthree\nfour\n", args)
    assert "two" in shown and "three" in shown and "one" not in shown and "four" not in shown, shown


def test_qp_read_file_line_offset_string(driver: HostDriver, tmp_path: Path) -> None:
    args = {"start_line": "3", "line_offset": "0"}
    shown = _read(driver, tmp_path, "one\ntwo\nthree\nfour\n", args)
    assert "error" not in shown.lower(), shown


@pytest.mark.parametrize(
    "args",
    [
        {"start_line": 99},
        {"start_line": -1},
        {"start_line": 3, "end_line": 1},
        {"start_line": "two"},
        {"start_line": 0},
        {"line_offset": -5},
        {"start_line": 1e30},
    ],
)
def test_qp_read_file_bad_arguments_clear_error(
    driver: HostDriver, tmp_path: Path, args: dict[str, object]
) -> None:
    shown = _read(driver, tmp_path, "one\ntwo\nthree\n", args)
    assert shown.strip(), "empty result"
    assert "Traceback" not in shown, shown
