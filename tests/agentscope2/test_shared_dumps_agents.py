"""Two real AgentScope 2.x agents as two replicas of one workspace (issue 20): A's
``/dump_history`` through the real middleware goes to the store, B's ``/load_history`` of
that name (B's folder lacks it) copies it in and loads it; a name A then takes is refused
on B."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from agentscope.message import UserMsg

from copaw_context import MemoryCompactionHook
from copaw_context.core.config.running import parse_running_config
from copaw_context.testing import ScriptedChatModel
from tests.agent_history import block_keys, seeded_history
from tests.helpers import make_agent
from tests.pg_server import pg_dsn
from tests.store_replicas import replica

__all__ = ["pg_dsn"]


def _config(dsn: str) -> Any:
    light = {"token_counter": "o200k_base", "compactor": "extractive", "store": {"dsn": dsn}}
    return parse_running_config({"running": {"light_context_config": light}})


async def test_a_dump_of_agent_a_loads_in_agent_b(pg_dsn: str, tmp_path: Path) -> None:
    agent_id = f"agent-{uuid.uuid4().hex}"
    a, b = replica(tmp_path / "a", agent_id), replica(tmp_path / "b", agent_id)
    history = seeded_history(4)
    async with MemoryCompactionHook(_config(pg_dsn), a) as hook_a:
        agent_a = await make_agent(hook_a, ScriptedChatModel([], context_size=200_000))
        agent_a.state.context = list(history)
        dumped = await agent_a.reply(UserMsg("user", "/dump_history shared/h.json"))
    text = dumped.get_text_content() or ""
    assert text.startswith("**History dumped.**") and "Only this worker" not in text, text
    assert not (b / "shared").exists()
    async with MemoryCompactionHook(_config(pg_dsn), b) as hook_b:
        agent_b = await make_agent(hook_b, ScriptedChatModel([], context_size=200_000))
        loaded = await agent_b.reply(UserMsg("user", "/load_history shared/h.json"))
        assert (loaded.get_text_content() or "").startswith("**History loaded.**"), loaded
        assert set(block_keys(history)) <= set(block_keys(agent_b.state.context))
        again = await agent_b.reply(UserMsg("user", "/dump_history shared/h.json"))
        assert "already exists" in (again.get_text_content() or "")
    assert (b / "shared" / "h.json").read_bytes() == (a / "shared" / "h.json").read_bytes()
