"""Output into a pipe whose reader has gone (``copaw-context ... | head -1``) ends the command
silently with status 141, without a BrokenPipeError traceback (issue 22, item 3)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CLOSED_PIPE_STATUS = 141  # 128 + SIGPIPE, as for a command the signal ended


def run_into_a_closed_pipe(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """Run the real CLI with stdout the write end of a pipe whose read end is already closed:
    every write fails with EPIPE, as after ``| head -1`` has read its line and exited."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [sys.executable, "-m", "copaw_context.cli", *argv],
            stdout=write_end,
            stderr=subprocess.PIPE,
            cwd=cwd,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)


def memory_workspace(root: Path) -> Path:
    workspace = root / "ws"
    (workspace / "memory").mkdir(parents=True)
    lines = [f"- 10:{i:02d} [user] the database migration step {i} failed" for i in range(40)]
    (workspace / "memory" / "2025-01-01.md").write_text("\n".join(lines) + "\n", "utf-8")
    return workspace


@pytest.mark.parametrize(
    ("argv", "status"),
    [
        (["check-config", "agent.json"], CLOSED_PIPE_STATUS),
        (["memory", "search", "database", "--workspace", "ws"], CLOSED_PIPE_STATUS),
        (["memory", "consolidate", "--workspace", "ws"], CLOSED_PIPE_STATUS),
        (["--help"], 0),  # argparse itself drops a write that fails and exits 0
    ],
    ids=["check-config", "memory-search", "memory-consolidate", "help"],
)
def test_a_closed_pipe_ends_the_command_silently(
    tmp_path: Path, argv: list[str], status: int
) -> None:
    (tmp_path / "agent.json").write_text('{"running": {}}', encoding="utf-8")
    memory_workspace(tmp_path)
    done = run_into_a_closed_pipe(argv, tmp_path)
    assert done.stderr.decode() == ""
    assert done.returncode == status


def test_an_open_pipe_gets_everything(tmp_path: Path) -> None:
    memory_workspace(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "copaw_context.cli", "memory", "search", "database"]
        + ["--workspace", "ws"],
        capture_output=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0 and done.stderr.decode() == ""
    assert done.stdout.decode().startswith("5 result(s) for 'database'")
