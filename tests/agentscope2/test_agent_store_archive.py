"""Two real AgentScope 2.x agents as two replicas of one workspace (issue 20, step 6): their
own empty folders, one PostgreSQL store, the same agent id. Replica A compacts with
``/compact``: the messages go to the database's archive, not only to A's folder; replica B's
model calls ``memory_search`` and finds what A archived, then ``read_file`` on the day file
the hit names. With the store down the compaction still holds the window and the messages
wait in the session state until the store is back."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from agentscope.message import Msg, ToolResultBlock, UserMsg

from copaw_context import ContextEvent, MemoryCompactionHook
from copaw_context.core.config.running import parse_running_config
from copaw_context.core.store.postgres import PostgresStore
from copaw_context.testing import ScriptedChatModel, text_step, tool_calls_step
from tests.agent_history import block_keys, seeded_history
from tests.helpers import make_agent
from tests.pg_server import pg_dsn

__all__ = ["pg_dsn"]


def _config(dsn: str) -> Any:
    light = {"token_counter": "o200k_base", "compactor": "extractive", "store": {"dsn": dsn}}
    return parse_running_config({"running": {"light_context_config": light}})


def _replica(root: Path, agent_id: str) -> Path:
    root.mkdir(parents=True)
    (root / "agent.json").write_text(json.dumps({"id": agent_id}), encoding="utf-8")
    return root


def _results(model: ScriptedChatModel) -> list[str]:
    blocks = [b for c in model.calls for m in c.messages for b in m.content]
    return [
        b.output if isinstance(b.output, str) else b.output[0].text
        for b in blocks
        if isinstance(b, ToolResultBlock)
    ]


async def test_replica_b_recalls_and_reads_what_replica_a_archived(
    pg_dsn: str, tmp_path: Path
) -> None:
    agent_id = f"agent-{uuid.uuid4().hex}"
    a, b = _replica(tmp_path / "a", agent_id), _replica(tmp_path / "b", agent_id)
    async with MemoryCompactionHook(_config(pg_dsn), a) as hook_a:
        agent_a = await make_agent(hook_a, ScriptedChatModel([], context_size=4000))
        agent_a.state.context = seeded_history(8)
        await agent_a.reply(UserMsg("user", "/compact"))
    store = PostgresStore(pg_dsn, agent_id)
    await store.open()
    try:
        (stream,) = await store.streams("dialog/")
        archived = await store.read(stream)
    finally:
        await store.close()
    assert len(archived) >= 8 and any(b"prod.yaml" in e.data for e in archived)

    day = stream.rpartition("/")[2]
    model_b = ScriptedChatModel(
        [
            tool_calls_step(("memory_search", {"query": "prod.yaml"})),
            tool_calls_step(("read_file", {"file_path": f"dialog/{day}", "start_line": 1})),
            text_step("found it"),
        ],
        context_size=200_000,
    )
    async with MemoryCompactionHook(_config(pg_dsn), b) as hook_b:
        agent_b = await make_agent(hook_b, model_b)
        reply = await agent_b.reply(UserMsg("user", "what did I say about prod.yaml?"))
    assert reply.get_text_content() == "found it"
    found, read = _results(model_b)[-2:]
    assert f"dialog/{day}" in found and "Never touch prod.yaml" in found
    assert "Never touch prod.yaml" in read
    assert (b / "dialog" / day).read_bytes() == b"".join(e.data + b"\n" for e in archived)


async def test_with_the_store_down_the_messages_wait_and_another_worker_writes_them(
    pg_dsn: str, tmp_path: Path
) -> None:
    events: list[ContextEvent] = []
    agent_id = f"agent-{uuid.uuid4().hex}"
    down = _config("postgresql://nobody@127.0.0.1:1/none")
    history = seeded_history(8)
    a = _replica(tmp_path / "a", agent_id)
    async with MemoryCompactionHook(down, a, on_event=events.append) as hook:
        agent = await make_agent(hook, ScriptedChatModel([], context_size=4000))
        agent.state.context = list(history)
        await agent.reply(UserMsg("user", "/compact"))
        key = await hook.get_middleware_key()
    pending = agent.state.middle_context[key]["pending_archive"]
    assert len(agent.state.context) < len(history)  # the window holds
    pending_keys = {
        (b.type, b.id) for r in pending for b in Msg.model_validate(r["message"]).content
    }
    assert set(block_keys(history)) <= set(block_keys(agent.state.context)) | pending_keys
    assert "archive_deferred" in [e.kind for e in events]
    assert not list((a / "dialog").glob("*.jsonl"))

    # The next turn lands on a worker whose database is up: it writes them first.
    b = _replica(tmp_path / "b", agent_id)
    async with MemoryCompactionHook(_config(pg_dsn), b, on_event=events.append) as hook_b:
        agent_b = await make_agent(hook_b, ScriptedChatModel([text_step("ok")], context_size=4000))
        agent_b.state = agent.state.model_copy(deep=True)
        await agent_b.reply(UserMsg("user", "and now?"))
        assert "pending_archive" not in agent_b.state.middle_context[key]
    assert "archive_flushed" in [e.kind for e in events]
    store = PostgresStore(pg_dsn, agent_id)
    await store.open()
    try:
        (stream,) = await store.streams("dialog/")
        rows = [json.loads(e.data) for e in await store.read(stream)]
    finally:
        await store.close()
    archived = {(b.type, b.id) for r in rows for b in Msg.model_validate(r["message"]).content}
    assert set(block_keys(history)) <= archived | set(block_keys(agent_b.state.context))


async def test_memory_md_written_on_replica_a_is_in_replica_bs_system_prompt(
    pg_dsn: str, tmp_path: Path
) -> None:
    agent_id = f"agent-{uuid.uuid4().hex}"
    a, b = _replica(tmp_path / "a", agent_id), _replica(tmp_path / "b", agent_id)
    edit = {"section": "Preferences", "content": "- Answers in French."}
    model_a = ScriptedChatModel(
        [tool_calls_step(("memory_edit", edit)), text_step("noted")], context_size=200_000
    )
    async with MemoryCompactionHook(_config(pg_dsn), a) as hook_a:
        agent_a = await make_agent(hook_a, model_a)
        await agent_a.reply(UserMsg("user", "Remember: answer in French."))
    assert "Added to section 'Preferences'" in _results(model_a)[-1]
    model_b = ScriptedChatModel([text_step("d'accord")], context_size=200_000)
    async with MemoryCompactionHook(_config(pg_dsn), b) as hook_b:
        agent_b = await make_agent(hook_b, model_b)
        await agent_b.reply(UserMsg("user", "hello"))
    system = model_b.calls[0].messages[0].get_text_content() or ""
    assert "Answers in French." in system
    assert "Answers in French." in (b / "MEMORY.md").read_text(encoding="utf-8")
