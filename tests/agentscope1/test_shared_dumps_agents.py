"""Two real AgentScope 1.x agents as two replicas of one workspace (issue 20): A's
``/dump_history`` goes to the store, B's ``/load_history`` of that name (B's folder lacks
it) copies it in and loads it into B's memory."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from agentscope.message import Msg

from tests.agentscope1.helpers import build_agent, settings
from tests.pg_server import pg_dsn

__all__ = ["pg_dsn"]


def _replica(root: Path, agent_id: str) -> Path:
    root.mkdir(parents=True)
    (root / "agent.json").write_text(json.dumps({"id": agent_id}), encoding="utf-8")
    return root


async def test_a_dump_of_agent_a_loads_in_agent_b(pg_dsn: str, tmp_path: Path) -> None:
    agent_id = f"agent-{uuid.uuid4().hex}"
    a, b = _replica(tmp_path / "a", agent_id), _replica(tmp_path / "b", agent_id)
    config = settings(store={"dsn": pg_dsn}, compactor="extractive")
    agent_a, hook_a, _ = await build_agent(a, [], config=config)
    agent_b, hook_b, model_b = await build_agent(b, [], config=config)
    try:
        await agent_a.memory.add(Msg("user", "Check the parser of m7.", "user"))
        await agent_a.memory.add(Msg("assistant", "The parser of m7 builds.", "assistant"))
        dumped = (
            await agent_a(Msg("user", "/dump_history shared/h.json", "user"))
        ).get_text_content()
        assert (dumped or "").startswith("**History dumped.**") and "Only this worker" not in dumped
        loaded = await agent_b(Msg("user", "/load_history shared/h.json", "user"))
        assert (loaded.get_text_content() or "").startswith("**History loaded.** 2 message(s)")
        texts = [m.get_text_content() for m in await agent_b.memory.get_memory()]
        assert "The parser of m7 builds." in texts and model_b.calls == []
        assert (b / "shared" / "h.json").read_bytes() == (a / "shared" / "h.json").read_bytes()
    finally:
        for hook in (hook_a, hook_b):
            await hook.close()
