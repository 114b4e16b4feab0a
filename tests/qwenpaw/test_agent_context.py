"""``CopawAgentContext``: QwenPaw's agent context with our state saved beside its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agentscope.message import Msg
from qwenpaw.agents.context.agent_context import AgentContext
from qwenpaw.agents.utils.estimate_token_counter import EstimatedTokenCounter

from copaw_context.qwenpaw import STATE_KEY, CopawAgentContext


def _context(archived: list[list[str]]) -> CopawAgentContext:
    async def archive(memory: CopawAgentContext, messages: list[Msg]) -> None:
        archived.append([m.get_text_content() or "" for m in messages])

    return CopawAgentContext(EstimatedTokenCounter(), archiver=archive)


async def test_the_state_travels_with_qwenpaws_memory_state() -> None:
    memory = _context([])
    await memory.add([Msg("user", "hello", "user")])
    await memory.update_compressed_summary("## Goal\n- x")
    memory.copaw_state["engine"]["stats"] = {"compactions": 2}
    saved = json.loads(json.dumps(memory.state_dict()))  # what QwenPaw writes to disk
    assert set(saved) == {"content", "_compressed_summary", STATE_KEY}

    loaded = _context([])
    loaded.load_state_dict(saved)
    assert loaded.copaw_state == memory.copaw_state
    assert loaded.copaw_state is not memory.copaw_state
    assert [(m.get_text_content(), marks) for m, marks in loaded.content] == [("hello", [])]
    assert loaded.get_compressed_summary() == "## Goal\n- x"


async def test_a_session_qwenpaw_saved_before_loads_with_a_fresh_state() -> None:
    qwenpaws = AgentContext(EstimatedTokenCounter())
    await qwenpaws.add([Msg("user", "from before the switch", "user")])
    memory = _context([])
    memory.load_state_dict(json.loads(json.dumps(qwenpaws.state_dict())))
    assert len(memory.copaw_state["session_id"]) == 32 and memory.copaw_state["engine"] == {}
    assert memory.content[0][0].get_text_content() == "from before the switch"
    memory.load_state_dict({**memory.state_dict(), STATE_KEY: "not ours"}, strict=False)
    assert memory.copaw_state["engine"] == {}


async def test_what_qwenpaw_clears_is_handed_to_the_archiver_first() -> None:
    archived: list[list[str]] = []
    memory = _context(archived)
    await memory.add([Msg("user", "a", "user"), Msg("assistant", "b", "assistant")])
    removed = await memory.mark_messages_compressed([memory.content[0][0]])
    assert removed == 1 and archived == [["a"]]
    memory.kept_by_compaction()  # our compaction just ran: what it kept stays
    await memory.clear_content()
    assert [m.get_text_content() for m, _ in memory.content] == ["b"] and archived == [["a"]]
    await memory.clear_content()
    assert memory.content == [] and archived == [["a"], ["b"]]


async def test_a_failing_archive_clears_nothing(tmp_path: Path) -> None:
    async def archive(memory: CopawAgentContext, messages: list[Msg]) -> None:
        raise OSError("disk full")

    memory = CopawAgentContext(EstimatedTokenCounter(), archiver=archive)
    await memory.add([Msg("user", "keep me", "user")])
    with pytest.raises(OSError):
        await memory.clear_content()
    assert len(memory.content) == 1


def test_clearing_the_summary_forgets_ours() -> None:
    memory = _context([])
    memory.copaw_state["engine"]["summary"] = "## Goal\n- old"
    memory.clear_compressed_summary()
    assert "summary" not in memory.copaw_state["engine"]
