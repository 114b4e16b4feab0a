"""kill -9 of a QwenPaw 1.1 process in the middle of a compaction, then QwenPaw started again
on the same folder (issue 19): the session loads with our state, nothing it held is lost,
the archive reads, the next request is answered."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.qwenpaw.kit import QwenPawSite, archive_lines, install_plugin, load_plugins

ROOT = Path(__file__).resolve().parents[2]


async def test_kill_9_during_a_compaction_then_a_restart_loses_nothing(
    qwenpaw_home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    install_plugin(qwenpaw_home)
    marker = tmp_path / "compacting"
    log = (tmp_path / "child.log").open("wb")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AGENTSCOPE_DISABLE_CONSOLE_OUTPUT": "true"}
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.qwenpaw.kill_child",
        str(qwenpaw_home),
        "killed",
        str(marker),
        cwd=tmp_path,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        for _ in range(1200):
            if marker.exists() or child.returncode is not None:
                break
            await asyncio.sleep(0.1)
        assert marker.exists(), (tmp_path / "child.log").read_text(errors="replace")[-3000:]
        os.kill(child.pid, signal.SIGKILL)
    finally:
        with contextlib.suppress(ProcessLookupError):
            child.kill()
        await child.wait()
        log.close()

    site = QwenPawSite(qwenpaw_home, "killed", monkeypatch, window=20000)
    sessions = list((site.workspace / "sessions").rglob("*.json"))
    before = site.saved_memory() if sessions else {"content": [], "copaw_context": None}
    await load_plugins(qwenpaw_home)
    workspace = await site.start()  # no crash at load
    reply = await site.ask(workspace, "after the kill: count to 20000")
    await workspace.stop()

    assert reply.startswith("done after"), reply
    after = site.saved_memory()
    if before["copaw_context"] is not None:
        assert after["copaw_context"]["session_id"] == before["copaw_context"]["session_id"]
    lines = archive_lines(site.workspace)  # every line parses
    held = {m["id"] for m, _ in after["content"]} | {line["message"]["id"] for line in lines}
    assert {m["id"] for m, _ in before["content"]} <= held
    assert {line["session_id"] for line in lines} <= {after["copaw_context"]["session_id"]}
