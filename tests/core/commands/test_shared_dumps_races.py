"""Shared dumps under stress (issue 20): two workers dumping one name at once, a store
going down between the check and the put, a dump in the store too big or not UTF-8, a dump
in an extra_read_root (local only) and a dump named like a file another feature keeps in
the store (``MEMORY.md``): that document is never touched."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest

from copaw_context.core.commands import history
from copaw_context.core.commands.history import _MAX_FILE_BYTES
from copaw_context.core.config.running import parse_running_config
from copaw_context.core.engine import ContextEngine
from copaw_context.core.store.postgres import PostgresStore
from copaw_context.core.store.protocol import StoreError
from tests.core.commands.dumps_kit import dump_config, dump_context
from tests.fake_host import FakeHost, user
from tests.pg_server import pg_dsn
from tests.store_replicas import replica, stored_document

__all__ = ["pg_dsn"]


async def test_two_workers_dumping_one_name_at_once(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both check the name before either puts (a barrier): one put wins, the loser's reply
    says its dump is only in its folder, where it stays; the store has the winner's."""
    agent_id = f"agent-{uuid.uuid4().hex}"
    a, b = replica(tmp_path / "a", agent_id), replica(tmp_path / "b", agent_id)
    engines = [ContextEngine(dump_config(pg_dsn), a), ContextEngine(dump_config(pg_dsn), b)]
    hosts = [FakeHost(dump_context()), FakeHost([*dump_context(), user("B's own last words.")])]
    barrier = asyncio.Barrier(2)
    checked = history.shared_dump_exists

    async def together(ctx: Any, path: Path) -> bool:
        found = await checked(ctx, path)
        await barrier.wait()
        return found

    monkeypatch.setattr(history, "shared_dump_exists", together)
    try:
        pairs = zip(engines, hosts, strict=True)
        replies = await asyncio.gather(
            *(e.run_command(h, "dump_history", "race.json") for e, h in pairs)
        )
        assert all(r.startswith("**History dumped.**") for r in replies), replies
        shared = [i for i, r in enumerate(replies) if "Only this worker" not in r]
        assert len(shared) == 1, replies  # exactly one is shared
        winner, loser = (a, b) if shared == [0] else (b, a)
        stored = await stored_document(pg_dsn, agent_id, ".history-dumps/race.json")
        assert stored == (winner / "race.json").read_bytes()
        assert "reached the workspace store first" in replies[1 - shared[0]]
        kept = json.loads((loser / "race.json").read_text("utf-8"))["messages"]
        assert len(kept) == (4 if loser is b else 3)  # the loser's own dump, not lost
    finally:
        for engine in engines:
            await engine.close()


async def test_a_store_down_between_the_check_and_the_put(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = replica(tmp_path / "a", f"agent-{uuid.uuid4().hex}")
    engine = ContextEngine(dump_config(pg_dsn), a)

    async def down(self: PostgresStore, key: str, data: bytes, expected: str) -> str:
        error = psycopg.OperationalError(
            "consuming input failed: server closed the connection unexpectedly\n\tThis "
            "probably means the server terminated abnormally\n\tbefore or while processing."
        )
        raise StoreError(f"the PostgreSQL store failed: {error}") from error

    monkeypatch.setattr(PostgresStore, "put_document", down)
    try:
        reply = await engine.run_command(FakeHost(dump_context()), "dump_history", "notes/h.json")
        assert reply.startswith("**History dumped.** 3 message(s)"), reply
        assert "Only this worker's folder has it" in reply and "server closed" in reply
        assert "\n" not in reply.split("Only this worker")[1]  # one line of error
        assert len(json.loads((a / "notes" / "h.json").read_text("utf-8"))["messages"]) == 3
    finally:
        await engine.close()


@pytest.mark.parametrize("kind", ["huge", "latin-1"])
async def test_a_dump_in_the_store_that_cannot_load(pg_dsn: str, tmp_path: Path, kind: str) -> None:
    agent_id = f"agent-{uuid.uuid4().hex}"
    head = b'{\n "format": "copaw-context.history/1",\n "form": "fake",\n "messages": [], "x": "'
    body = b"a" * (_MAX_FILE_BYTES + 1) if kind == "huge" else "é".encode("latin-1")
    store = PostgresStore(pg_dsn, agent_id)
    await store.open()
    await store.put_document(".history-dumps/h.json", head + body + b'"}', "")
    await store.close()
    b = replica(tmp_path / "b", agent_id)
    engine = ContextEngine(dump_config(pg_dsn), b)
    host = FakeHost([user("Keep me.")])
    before = [m.msg_id for m in host.messages]
    try:
        reply = await engine.run_command(host, "load_history", "h.json")
        why = "byte limit" if kind == "huge" else "not UTF-8"
        assert reply.startswith("**Not loaded.**") and why in reply, reply
        assert "context is unchanged" in reply and [m.msg_id for m in host.messages] == before
        assert not (b / "h.json").exists()
    finally:
        await engine.close()


async def test_a_dump_in_an_extra_read_root_stays_local(pg_dsn: str, tmp_path: Path) -> None:
    agent_id = f"agent-{uuid.uuid4().hex}"
    shared = tmp_path / "shared"
    light = {"compactor": "extractive", "store": {"dsn": pg_dsn}, "extra_read_roots": [str(shared)]}
    config = parse_running_config(
        {"running": {"memory": {"enabled": False}, "light_context_config": light}}
    )
    a, b = replica(tmp_path / "a", agent_id), replica(tmp_path / "b", agent_id)
    engine_a, engine_b = ContextEngine(config, a), ContextEngine(config, b)
    try:
        out = await engine_a.run_command(
            FakeHost(dump_context()), "dump_history", str(shared / "x.json")
        )
        assert out.startswith("**Not dumped.**") and "outside the workspace" in out
        shared.mkdir()
        await engine_a.run_command(FakeHost(dump_context()), "dump_history", "mine.json")
        (a / "mine.json").rename(shared / "mine.json")
        loaded = await engine_b.run_command(
            FakeHost([user("x")]), "load_history", str(shared / "mine.json")
        )
        assert loaded.startswith("**History loaded.**"), loaded
        missing = await engine_b.run_command(
            FakeHost([user("x")]), "load_history", str(shared / "no.json")
        )
        assert missing.startswith("**Not loaded.**") and "does not exist" in missing
        assert sorted(p.name for p in shared.iterdir()) == ["mine.json"]
    finally:
        await engine_a.close()
        await engine_b.close()


@pytest.mark.parametrize(
    "name",
    [
        "MEMORY.md",
        "memory.md",
        "agent.json",
        "AGENTS.md",
        "memory/x.json",
        "tool_result/x.json",
        "dialog/requests/x.json",
        "dialog/2026-01-01.jsonl",
    ],
)
async def test_a_dump_never_takes_a_name_the_package_reads(
    pg_dsn: str, tmp_path: Path, name: str
) -> None:
    agent_id = f"agent-{uuid.uuid4().hex}"
    a = replica(tmp_path / "a", agent_id)
    before = sorted(p.relative_to(a).as_posix() for p in a.rglob("*"))
    there = (a / name).read_bytes() if (a / name).is_file() else None  # agent.json is
    engine = ContextEngine(dump_config(pg_dsn), a)
    try:
        reply = await engine.run_command(FakeHost(dump_context()), "dump_history", name)
        assert reply.startswith("**Not dumped.**") and "name another file" in reply, reply
        assert ((a / name).read_bytes() if (a / name).is_file() else None) == there
        kept = await engine.run_command(FakeHost(dump_context()), "dump_history", "notes/h.json")
        assert kept.startswith("**History dumped.**")
    finally:
        await engine.close()
    assert await stored_document(pg_dsn, agent_id, name) is None
    assert await stored_document(pg_dsn, agent_id, f".history-dumps/{name}") is None
    assert await stored_document(pg_dsn, agent_id, ".history-dumps/notes/h.json") is not None
    assert all(p in sorted(q.relative_to(a).as_posix() for q in a.rglob("*")) for p in before)
