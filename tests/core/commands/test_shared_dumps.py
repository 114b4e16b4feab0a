"""``/dump_history`` on one worker, ``/load_history`` on another (issue 20): with a
PostgreSQL store the dump is also a document, copied into the other worker's folder when
it is loaded there; a name another worker took is refused; a store that is down leaves the
dump in this worker's folder, and the reply says so; no other document is written into a
folder through ``/load_history``."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from copaw_context.core.config.running import parse_running_config
from copaw_context.core.engine import ContextEngine
from copaw_context.core.store.postgres import PostgresStore
from tests.core.commands.dumps_kit import dump_config, dump_context
from tests.fake_host import FakeHost, user
from tests.pg_server import pg_dsn
from tests.store_replicas import replica

__all__ = ["pg_dsn"]


async def test_a_dump_on_one_worker_loads_on_another(pg_dsn: str, tmp_path: Path) -> None:
    agent_id = f"agent-{uuid.uuid4().hex}"
    a, b = replica(tmp_path / "a", agent_id), replica(tmp_path / "b", agent_id)
    engine_a, engine_b = (
        ContextEngine(dump_config(pg_dsn), a),
        ContextEngine(dump_config(pg_dsn), b),
    )
    try:
        dumped = await engine_a.run_command(
            FakeHost(dump_context()), "dump_history", "notes/h.json"
        )
        assert dumped.startswith("**History dumped.**") and "Only this worker" not in dumped
        assert not (b / "notes" / "h.json").exists()
        host_b = FakeHost([user("Something else.")])
        loaded = await engine_b.run_command(host_b, "load_history", "notes/h.json")
        assert loaded.startswith("**History loaded.** 3 message(s) from notes/h.json"), loaded
        assert (b / "notes" / "h.json").read_bytes() == (a / "notes" / "h.json").read_bytes()
        assert "The parser builds." in json.dumps([m.parts for m in host_b.messages], default=str)
        taken = await engine_b.run_command(FakeHost(dump_context()), "dump_history", "notes/g.json")
        assert taken.startswith("**History dumped.**")
        again = await engine_a.run_command(FakeHost(dump_context()), "dump_history", "notes/g.json")
        assert again.startswith("**Not dumped.**") and "already exists" in again
        assert not (a / "notes" / "g.json").exists()  # nothing written on A
    finally:
        await engine_a.close()
        await engine_b.close()


async def test_load_history_never_writes_another_document_into_the_folder(
    pg_dsn: str, tmp_path: Path
) -> None:
    agent_id = f"agent-{uuid.uuid4().hex}"
    store = PostgresStore(pg_dsn, agent_id)
    await store.open()
    await store.put_document("notes/not-a-dump.json", b'{"messages": []}', "")
    await store.close()
    b = replica(tmp_path / "b", agent_id)
    engine = ContextEngine(dump_config(pg_dsn), b)
    try:
        reply = await engine.run_command(FakeHost(), "load_history", "notes/not-a-dump.json")
        assert reply.startswith("**Not loaded.**") and "does not exist" in reply
        assert not (b / "notes").exists()
    finally:
        await engine.close()


async def test_a_store_that_is_down_leaves_the_dump_here_and_says_so(tmp_path: Path) -> None:
    a = replica(tmp_path / "a", "agent-down")
    engine = ContextEngine(dump_config("postgresql://nobody@127.0.0.1:1/none"), a)
    try:
        reply = await engine.run_command(FakeHost(dump_context()), "dump_history", "notes/h.json")
        assert reply.startswith("**History dumped.** 3 message(s)")
        assert "Only this worker's folder has it" in reply and "unavailable" in reply
        assert json.loads((a / "notes" / "h.json").read_text("utf-8"))["messages"]
    finally:
        await engine.close()


async def test_a_stored_dump_at_a_name_the_package_reads_is_never_copied_in(
    pg_dsn: str, tmp_path: Path
) -> None:
    """A dump an older version put under MEMORY.md stays in the store: copying it into a
    folder that lacks MEMORY.md would make it the agent's memory."""
    agent_id = f"agent-{uuid.uuid4().hex}"
    a = replica(tmp_path / "a", agent_id)
    engine_a = ContextEngine(dump_config(pg_dsn), a)
    try:
        await engine_a.run_command(FakeHost(dump_context()), "dump_history", "notes/h.json")
    finally:
        await engine_a.close()
    store = PostgresStore(pg_dsn, agent_id)
    await store.open()
    dump = (await store.get_document(".history-dumps/notes/h.json")).data
    assert dump is not None
    await store.put_document(".history-dumps/MEMORY.md", dump, "")
    await store.close()
    b = replica(tmp_path / "b", agent_id)
    engine_b = ContextEngine(dump_config(pg_dsn), b)
    try:
        reply = await engine_b.run_command(FakeHost(), "load_history", "MEMORY.md")
        assert reply.startswith("**Not loaded.**") and "does not exist" in reply
        assert not (b / "MEMORY.md").exists()
    finally:
        await engine_b.close()


async def test_a_name_the_store_cannot_key_is_dumped_here_and_the_reply_says_so(
    pg_dsn: str, tmp_path: Path
) -> None:
    a = replica(tmp_path / "a", f"agent-{uuid.uuid4().hex}")
    engine = ContextEngine(dump_config(pg_dsn), a)
    try:
        for name in ("notes/my notes.json", "notes/对话.json"):
            reply = await engine.run_command(FakeHost(dump_context()), "dump_history", name)
            assert reply.startswith("**History dumped.**"), reply
            assert "Only this worker's folder has it" in reply and "ASCII letters" in reply
            assert (a / name).exists()
    finally:
        await engine.close()


async def test_a_load_through_dot_dot_copies_to_the_resolved_name(
    pg_dsn: str, tmp_path: Path
) -> None:
    agent_id = f"agent-{uuid.uuid4().hex}"
    a, b = replica(tmp_path / "a", agent_id), replica(tmp_path / "b", agent_id)
    engine_a, engine_b = (
        ContextEngine(dump_config(pg_dsn), a),
        ContextEngine(dump_config(pg_dsn), b),
    )
    try:
        await engine_a.run_command(FakeHost(dump_context()), "dump_history", "notes/h.json")
        reply = await engine_b.run_command(FakeHost(), "load_history", "sub/../notes/h.json")
        assert reply.startswith("**History loaded.**"), reply
        assert (b / "notes" / "h.json").exists() and not (b / "sub").exists()
    finally:
        await engine_a.close()
        await engine_b.close()


async def test_names_the_package_reads_are_refused_whatever_their_case(tmp_path: Path) -> None:
    """``2025-01-01.JSONL`` is the archive's day file on a case-insensitive disk, and
    ``Memory/`` the memory folder."""
    a = replica(tmp_path / "a", "agent-case")
    config = parse_running_config({"running": {"memory": {"enabled": False}}})
    engine = ContextEngine(config, a)
    try:
        for name in ("dialog/2025-01-01.JSONL", "Memory/x.json", "DIALOG/Requests/x.json"):
            reply = await engine.run_command(FakeHost(dump_context()), "dump_history", name)
            assert reply.startswith("**Not dumped.**"), (name, reply)
            assert not (a / name).exists()
        kept = await engine.run_command(FakeHost(dump_context()), "dump_history", "dialog/x.JSON")
        assert kept.startswith("**History dumped.**"), kept
    finally:
        await engine.close()
