"""``--workspace`` that is no directory and cannot be made one: one clear line, exit 2."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from copaw_context.cli import main


@pytest.fixture
def in_tmp(tmp_path: Path) -> Path:
    cwd = Path.cwd()
    os.chdir(tmp_path)
    (tmp_path / "afile").write_text("not a directory\n", encoding="utf-8")
    try:
        yield tmp_path
    finally:
        os.chdir(cwd)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["demo", "--steps", "2", "--workspace", "afile"], "--workspace afile: is a file"),
        (
            ["chat", "--config", "{config}", "--model", "m", "--workspace", "afile/sub"],
            "--workspace afile/sub: cannot be created: {tmp}/afile is a file",
        ),
        (
            ["demo", "--steps", "2", "--workspace", "/proc/copaw-context-x"],
            "--workspace /proc/copaw-context-x: cannot be created (",
        ),
        (["memory", "consolidate", "--workspace", "afile"], "--workspace afile: is a file"),
    ],
)
def test_an_unusable_workspace_is_one_clear_error(
    in_tmp: Path, capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    config = in_tmp / "agent.json"
    config.write_text('{"running": {}}', encoding="utf-8")
    argv = [arg.replace("{config}", str(config)) for arg in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("copaw-context: error: ")
    assert expected.replace("{tmp}", str(in_tmp)) in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert (in_tmp / "afile").read_text(encoding="utf-8") == "not a directory\n"
