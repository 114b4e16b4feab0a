"""Ctrl-C ends ``demo`` and ``chat`` with one line and status 130, never a traceback, and the
demo stops instead of going on with its next scripted turn."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest


def _start(args: list[str], tmp_path: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "AGENTSCOPE_DISABLE_CONSOLE_OUTPUT": "true"}
    return subprocess.Popen(
        [sys.executable, "-m", "copaw_context.cli", *args],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(process: subprocess.Popen[str], marker: str) -> str:
    assert process.stdout is not None
    seen = ""
    deadline = time.monotonic() + 120
    while marker not in seen:
        assert time.monotonic() < deadline, f"no {marker!r} in: {seen!r}"
        ready, _, _ = select.select([process.stdout], [], [], 1.0)
        if ready:
            chunk = os.read(process.stdout.fileno(), 4096).decode()
            assert chunk, f"ended before {marker!r}: {seen!r}"
            seen += chunk
    return seen


def _interrupt(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    return process.returncode, out, err


def test_ctrl_c_stops_the_demo_after_the_turn(tmp_path: Path) -> None:
    process = _start(["demo", "--workspace", str(tmp_path / "ws")], tmp_path)
    before = _wait_for(process, "compactions")  # the step header: the demo has begun
    status, out, err = _interrupt(process)
    assert status == 130, (status, err)
    assert err.strip().endswith("copaw-context: interrupted"), err
    assert "Traceback" not in err + out
    assert (before + out).count("user> ") <= 2, "the demo went on after Ctrl-C"


def test_ctrl_c_at_the_chat_prompt_ends_the_chat_at_once(tmp_path: Path) -> None:
    config = tmp_path / "agent.json"
    config.write_text('{"running": {"memory": {"enabled": false}}}', encoding="utf-8")
    process = _start(
        [
            "chat",
            "--config",
            str(config),
            "--workspace",
            str(tmp_path / "ws"),
            "--model",
            "local",
            "--base-url",
            "http://127.0.0.1:9/v1",
        ],
        tmp_path,
    )
    _wait_for(process, "you> ")
    status, out, err = _interrupt(process)  # stdin stays open: nothing was typed
    assert status == 130, (status, err)
    assert err.strip().endswith("copaw-context: interrupted"), err
    assert "Traceback" not in err + out


def test_an_empty_workspace_is_kept_and_an_unwritable_one_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from copaw_context.cli.demo.run import _prepare_workspace

    empty = tmp_path / "mine"
    empty.mkdir(mode=0o700)
    identity = empty.stat().st_ino
    _prepare_workspace(empty, fresh=True)
    assert empty.stat().st_ino == identity and empty.stat().st_mode & 0o777 == 0o700
    _prepare_workspace(empty, fresh=True)  # its own marker: emptied, still the same folder
    assert empty.stat().st_ino == identity

    def refused(self: Path, *args: object, **kwargs: object) -> int:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "write_text", refused)  # as on a read-only folder
    with pytest.raises(SystemExit) as stop:
        _prepare_workspace(tmp_path / "locked", fresh=True)
    message = str(stop.value)
    assert message.startswith("--workspace ")  # the CLI adds "copaw-context: error: " once
    assert "cannot write there (Permission denied)" in message


def test_chat_says_when_it_starts_a_new_workspace(tmp_path: Path) -> None:
    config = tmp_path / "agent.json"
    config.write_text('{"running": {"memory": {"enabled": false}}}', encoding="utf-8")
    typo = tmp_path / "wrokspace"
    done = subprocess.run(
        [sys.executable, "-m", "copaw_context.cli", "chat", "--config", str(config)]
        + ["--workspace", str(typo), "--model", "local", "--base-url", "http://127.0.0.1:9/v1"],
        input="/exit\n",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert f"{typo} did not exist: starting a new workspace there" in done.stderr
    assert typo.is_dir()


def test_the_demo_into_a_closed_pipe_ends_silently(tmp_path: Path) -> None:
    process = _start(["demo", "--workspace", str(tmp_path / "ws")], tmp_path)
    assert process.stdout is not None
    process.stdout.readline()  # like `| head -1`: one line, then the reader is gone
    process.stdout.close()
    _, err = process.communicate(timeout=300)
    assert process.returncode == 141, err
    assert err == "", err  # no AgentScope warning, no unclosed-hook warning, no traceback


def test_the_demo_with_an_unreachable_model_is_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "copaw_context.cli", "demo", "--workspace", str(tmp_path / "ws")]
        + ["--model", "m", "--base-url", "http://127.0.0.1:9/v1"],
        cwd=tmp_path,
        env={**os.environ, "OPENAI_API_KEY": "x", "AGENTSCOPE_DISABLE_CONSOLE_OUTPUT": "true"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "WARNING" not in done.stderr, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("copaw-context: error: the demo's model call failed: could not reach")
