"""Three replicas of one agent on a real PostgreSQL (issue 20), on the installed AgentScope
major: three OS processes, each with its own empty folder, one database, the same agent id,
take turns on the same two sessions under a session lock, as AgentScope's agent service runs
them (``replica_worker.py``). One replica SIGKILLs itself in its first compaction (archived
and committed, the turn's state not saved), and another inside the daily consolidation's
model call (holding its lease). Afterwards, counted from the database and every replica's
folder: no message lost, none archived twice, every notice readable from every replica,
recall on every replica finds every archived fact, MEMORY.md has every edit (no lost update)
and every replica's log notes folded once."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

from copaw_context.core.context.step_context import StepContext
from copaw_context.core.store.postgres import PostgresStore
from copaw_context.core.tools.read_tool import ReadFileTool
from tests.pg_server import pg_dsn
from tests.reliability.drivers import HostDriver
from tests.reliability.replica_worker import SESSIONS, TURNS, code, replica_config, service_id

__all__ = ["pg_dsn"]

ROOT = Path(__file__).resolve().parents[2]
_BLOB_KEY = re.compile(r"(?:tool_result|dialog/requests)/[0-9a-f]{32}\.txt")
_DEADLINE_SECONDS = 300.0


class Replicas:
    """The replica processes of one test: started, waited for, restarted after a kill."""

    def __init__(self, dsn: str, folders: list[Path], agent_id: str) -> None:
        self.dsn, self.folders, self.agent_id = dsn, folders, agent_id
        self.env = {**os.environ, "AGENTSCOPE_DISABLE_CONSOLE_OUTPUT": "true"}

    def start(self, action: str, worker: int, *flags: str) -> subprocess.Popen[bytes]:
        folder = str(self.folders[worker])
        command = ["-m", "tests.reliability.replica_worker", action, self.dsn, folder]
        return subprocess.Popen(
            [sys.executable, *command, self.agent_id, str(worker), *flags], cwd=ROOT, env=self.env
        )


def wait(process: subprocess.Popen[bytes]) -> int:
    try:
        return process.wait(timeout=_DEADLINE_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        raise AssertionError(f"replica {process.args} did not finish") from None


async def _streams(dsn: str, workspace: str, prefix: str) -> dict[str, list[bytes]]:
    store = PostgresStore(dsn, workspace)
    await store.open()
    try:
        return {s: [e.data for e in await store.read(s)] for s in await store.streams(prefix)}
    finally:
        await store.close()


async def _document(dsn: str, workspace: str, key: str) -> bytes:
    store = PostgresStore(dsn, workspace)
    await store.open()
    try:
        return (await store.get_document(key)).data or b""
    finally:
        await store.close()


async def test_three_replicas_lose_and_repeat_nothing(
    driver: HostDriver, pg_dsn: str, tmp_path: Path
) -> None:
    agent_id = f"agent-{uuid.uuid4().hex}"
    folders = [tmp_path / f"replica{i}" for i in range(3)]
    for folder in folders:
        folder.mkdir()
        (folder / "agent.json").write_text(json.dumps({"id": agent_id}), encoding="utf-8")
    replicas = Replicas(pg_dsn, folders, agent_id)

    # Replica 0 alone until its first compaction kills it; then all three take turns.
    assert wait(replicas.start("turns", 0, "compaction")) == -9
    workers = [replicas.start("turns", i) for i in range(3)]
    assert [wait(w) for w in workers] == [0, 0, 0]
    # The daily consolidation: replica 1 dies inside it, then all three run it at once.
    assert wait(replicas.start("consolidate", 1, "consolidation")) == -9
    started = time.monotonic()
    runs = [replicas.start("consolidate", i) for i in range(3)]
    assert [wait(r) for r in runs] == [0, 0, 0]
    assert time.monotonic() - started < _DEADLINE_SECONDS

    service = service_id(agent_id)
    states = {
        s: json.loads(await _document(pg_dsn, service, f"sessions/{s}.json")) for s in SESSIONS
    }
    assert {s: state["turn"] for s, state in states.items()} == dict.fromkeys(SESSIONS, TURNS)
    archive = await _streams(pg_dsn, agent_id, "dialog/")
    rows = [json.loads(line) for lines in archive.values() for line in lines]
    assert rows, "the compactions archived nothing"

    # Nothing archived twice: each archive key and each message part once.
    keys = Counter((r["session_id"], r["archive_id"]) for r in rows)
    parts = Counter((r["session_id"], p) for r in rows for p in r.get("parts") or ())
    assert [k for k, n in keys.items() if n > 1] == []
    assert [p for p, n in parts.items() if n > 1] == []
    # Nothing lost: every turn's request is in its session's context or in the archive.
    held = json.dumps([s["agent"] for s in states.values()]) + json.dumps(rows)
    lost = [code(s, t) for s in SESSIONS for t in range(TURNS) if code(s, t) not in held]
    assert lost == []

    config = replica_config(pg_dsn)
    blobs = sorted(set(_BLOB_KEY.findall(held)))
    assert any(k.startswith("tool_result/") for k in blobs), "no notice names a saved result"
    assert any(k.startswith("dialog/requests/") for k in blobs), "no request was cut"
    for folder in folders:
        tool = ReadFileTool.from_config(config, folder)
        for key in blobs:
            result, _ = await tool.read(key, 1, 1)
            assert result.ok and result.text.startswith(("BEGIN job", "turn 1 of ")), key

    archived = [code(s, t) for s in SESSIONS for t in range(TURNS) if code(s, t) in str(rows)]
    assert archived, "no request left the context"
    for folder in folders:
        context = StepContext(config, folder)
        try:
            for fact in archived:
                hits = await context.memory.tools.index.search(fact, 20)
                assert any(h.kind == "dialog" for h in hits), (folder.name, fact)
        finally:
            await context.close_store()

    # After recall brought it up to date, every local copy of the archive is the database's.
    for folder in folders:
        for stream, lines in archive.items():
            assert (folder / stream).read_bytes() == b"".join(line + b"\n" for line in lines)

    memory = (await _document(pg_dsn, agent_id, "MEMORY.md")).decode()
    edits = [code(s, t) for s in SESSIONS for t in range(TURNS)]
    assert [fact for fact in edits if f"code {fact}" not in memory] == []
    assert [fact for fact in edits if memory.count(f"note {fact}") != 1] == []
    record = json.loads(await _document(pg_dsn, agent_id, "memory/.consolidated.json"))
    assert record["logs"], "the consolidation record is not shared"
