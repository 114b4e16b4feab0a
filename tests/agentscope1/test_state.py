"""Per-agent state survives a restart through 1.x's own session saving (JSONSession)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agentscope.message import Msg
from agentscope.session import JSONSession

from copaw_context.agentscope1 import STATE_ATTRIBUTE
from copaw_context.testing import ScriptedChatModel, scaled_usage, text_step
from tests.agentscope1.helpers import build_agent, settings
from tests.reliability.as1_driver import As1Driver


async def test_the_engine_state_round_trips_through_json_session(tmp_path: Path) -> None:
    config = settings(4000, compactor="extractive", token_counter="estimate")
    # A provider counting 1.5x our estimate: the calibration learns it.
    agent, hook, model = await build_agent(
        tmp_path, [text_step("first")], config=config, context_size=4000, usage=scaled_usage(1.5)
    )
    await As1Driver().seed(agent, 8)
    await agent(Msg("user", "go on", "user"))
    before = await hook.agent_stats(agent)
    assert before["compactions"] == 1
    calibration = (await hook.calibration_for(agent)).factor
    assert calibration > 1.2
    session_id = agent.state_dict()[STATE_ATTRIBUTE]["session_id"]
    summary = (await agent.memory.get_memory())[0].get_text_content()
    store = JSONSession(save_dir=str(tmp_path / "sessions"))
    await store.save_session_state("s1", agent=agent)

    # A new process: a new agent, the same hook settings, the saved session loaded.
    restored, hook2, _ = await build_agent(
        tmp_path, [text_step("second")], config=config, context_size=4000
    )
    await store.load_session_state("s1", agent=restored)
    assert await hook2.agent_stats(restored) == before
    assert (await hook2.calibration_for(restored)).factor == calibration
    assert restored.state_dict()[STATE_ATTRIBUTE]["session_id"] == session_id
    assert (await restored.memory.get_memory())[0].get_text_content() == summary
    await restored(Msg("user", "and now?", "user"))
    lines = (tmp_path / "dialog").glob("*.jsonl")
    assert {session_id} == {
        json.loads(line)["session_id"]
        for path in lines
        for line in path.read_text(encoding="utf-8").splitlines()
    }, "the archive goes on with the same session"


async def test_a_session_saved_before_attaching_still_loads(tmp_path: Path) -> None:
    """A QwenPaw user's saved sessions have no copaw_context key; 1.x loads strictly."""
    from agentscope.agent import ReActAgent

    model = ScriptedChatModel([text_step("plain")])
    plain = ReActAgent(name="assistant", sys_prompt="s", model=model, formatter=model.formatter)
    plain.set_console_output_enabled(False)
    await plain(Msg("user", "remember the codename BLUEFIN", "user"))
    store = JSONSession(save_dir=str(tmp_path / "sessions"))
    await store.save_session_state("old", agent=plain)

    agent, hook, model2 = await build_agent(tmp_path, [text_step("BLUEFIN it is")])
    await store.load_session_state("old", agent=agent)
    assert [m.get_text_content() for m, _ in agent.memory.content] == [
        "remember the codename BLUEFIN",
        "plain",
    ]
    state = agent.state_dict()[STATE_ATTRIBUTE]
    assert state["engine"] == {} and state["session_id"]
    reply = await agent(Msg("user", "what was it?", "user"))
    assert reply.get_text_content() == "BLUEFIN it is"
    assert "BLUEFIN" in str(model2.calls[0].formatted)


async def test_a_damaged_saved_entry_is_replaced_not_raised(tmp_path: Path) -> None:
    agent, hook, _ = await build_agent(tmp_path, [text_step("ok")])
    state = agent.state_dict()
    state[STATE_ATTRIBUTE] = "not ours"
    agent.load_state_dict(state)
    entry = agent.state_dict()[STATE_ATTRIBUTE]
    assert entry["engine"] == {} and isinstance(entry["session_id"], str)
    assert (await agent(Msg("user", "hi", "user"))).get_text_content() == "ok"


async def test_loading_a_session_before_attaching_is_warned_about(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from agentscope.agent import ReActAgent

    from copaw_context.agentscope1 import MemoryCompactionHook

    agent, _, _ = await build_agent(tmp_path, [text_step("first")])
    await agent(Msg("user", "hello", "user"))
    store = JSONSession(save_dir=str(tmp_path / "sessions"))
    await store.save_session_state("s1", agent=agent)

    model = ScriptedChatModel([text_step("again")])
    late = ReActAgent(name="assistant", sys_prompt="s", model=model, formatter=model.formatter)
    late.set_console_output_enabled(False)
    await store.load_session_state("s1", agent=late)
    with caplog.at_level("WARNING", logger="copaw_context"):
        await MemoryCompactionHook(settings(), tmp_path).attach(late)
    assert "attach the hook before loading the session" in caplog.text
    assert "2 messages" in caplog.text
