"""Attaching the hook to AgentScope 1.x agents: what it adds, and every bad input's error."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest
from agentscope.agent import ReActAgent
from agentscope.memory import InMemoryMemory
from agentscope.message import Msg
from agentscope.token import CharTokenCounter
from agentscope.tool import Toolkit, ToolResponse

import copaw_context
from copaw_context.agentscope1 import HOOK_NAME, MemoryCompactionHook
from copaw_context.core.config.running import parse_running_config
from copaw_context.testing import ScriptedChatModel, text_step
from tests.agentscope1.helpers import build_agent, settings


def test_the_package_gives_the_1x_adapter_and_imports_no_agentscope() -> None:
    assert copaw_context.MemoryCompactionHook is MemoryCompactionHook
    assert copaw_context.installed_agentscope_major() == 1
    code = (
        "import sys, copaw_context, copaw_context.core.engine; "
        "print(sum(1 for m in sys.modules if m.split('.')[0] == 'agentscope'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "0"


async def test_attach_registers_hooks_tools_and_state(tmp_path: Path) -> None:
    agent, hook, model = await build_agent(tmp_path, [text_step("hi")])
    assert HOOK_NAME in agent._instance_pre_reasoning_hooks
    assert HOOK_NAME in agent._instance_post_acting_hooks
    assert await hook.attach(agent) is hook  # idempotent
    assert list(agent._instance_pre_reasoning_hooks) == [HOOK_NAME]
    await agent(Msg("user", "hello", "user"))
    assert model.calls[0].tool_names == [
        "read_file",
        "memory_append_log",
        "memory_edit",
        "memory_search",
    ]
    state = agent.state_dict()["copaw_context"]
    assert isinstance(state["session_id"], str) and isinstance(state["engine"], dict)


async def test_a_tool_already_named_read_file_is_replaced_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def read_file(file_path: str) -> ToolResponse:
        """QwenPaw's own reader.

        Args:
            file_path (`str`): The file.
        """
        return ToolResponse(content=[{"type": "text", "text": "theirs"}])

    model = ScriptedChatModel([text_step("ok")])
    toolkit = Toolkit()
    toolkit.register_tool_function(read_file)
    agent = ReActAgent(
        name="a", sys_prompt="s", model=model, formatter=model.formatter, toolkit=toolkit
    )
    with caplog.at_level(logging.WARNING, "copaw_context"):
        await MemoryCompactionHook(settings(), tmp_path).attach(agent)
    assert "replacing the toolkit's read_file" in caplog.text
    assert agent.toolkit.tools["read_file"].original_func is not read_file


async def test_bad_agents_are_refused_with_a_clear_error(tmp_path: Path) -> None:
    hook = MemoryCompactionHook(settings(), tmp_path)
    with pytest.raises(TypeError, match="needs an AgentScope 1.x ReActAgent; object has no"):
        await hook.attach(object())

    class Elsewhere(InMemoryMemory):
        def __init__(self) -> None:
            super().__init__()
            self.content = None  # type: ignore[assignment]

    model = ScriptedChatModel([])
    agent = ReActAgent(
        name="a", sys_prompt="s", model=model, formatter=model.formatter, memory=Elsewhere()
    )
    with pytest.raises(TypeError, match="memory to be an InMemoryMemory"):
        await hook.attach(agent)

    compressing = ReActAgent(
        name="a",
        sys_prompt="s",
        model=model,
        formatter=model.formatter,
        compression_config=ReActAgent.CompressionConfig(
            enable=True, agent_token_counter=CharTokenCounter(), trigger_threshold=1000
        ),
    )
    with pytest.raises(ValueError, match="own compression"):
        await hook.attach(compressing)
    native = parse_running_config({"running": {"context_manager_backend": "native"}})
    assert await MemoryCompactionHook(native, tmp_path).attach(compressing)

    agent, _, _ = await build_agent(tmp_path, [])
    with pytest.raises(ValueError, match="another copaw-context hook"):
        await MemoryCompactionHook(settings(), tmp_path).attach(agent)


def test_only_a_compactor_setup_that_cannot_work_is_refused(tmp_path: Path) -> None:
    model = ScriptedChatModel([])
    with pytest.raises(ValueError, match="compactor_formatter without compactor_model"):
        MemoryCompactionHook(settings(), tmp_path, compactor_formatter=model.formatter)
    with pytest.raises(TypeError, match="compactor_model must be an AgentScope 1.x chat model"):
        MemoryCompactionHook(settings(), tmp_path, compactor_model="qwen-turbo")
    with pytest.raises(TypeError, match="compactor_formatter must be an AgentScope 1.x"):
        MemoryCompactionHook(settings(), tmp_path, compactor_model=model, compactor_formatter=1)


async def test_a_compactor_model_alone_uses_the_agents_formatter(tmp_path: Path) -> None:
    """Same provider, another model: no formatter needed (issue 17 item 19)."""
    from tests.summaries import PREVIOUS_SUMMARY

    compactor = ScriptedChatModel([text_step(PREVIOUS_SUMMARY)])
    model = ScriptedChatModel([])
    agent = ReActAgent(name="assistant", sys_prompt="sys", model=model, formatter=model.formatter)
    agent.set_console_output_enabled(False)
    for t in range(6):
        await agent.memory.add(Msg("user", f"Request {t}: check m{t}. " + "x" * 800, "user"))
        await agent.memory.add(Msg("assistant", f"Checked m{t}: " + "y" * 800, "assistant"))
    hook = MemoryCompactionHook(settings(compactor="llm"), tmp_path, compactor_model=compactor)
    hook.attach(agent)
    reply = await agent(Msg("user", "/compact", "user"))
    assert (reply.get_text_content() or "").startswith("**Compact Complete!**")
    assert len(compactor.calls) == 1 and not model.calls
    assert compactor.calls[0].formatted[0]["role"] == "system"


async def test_from_agent_json_uses_the_folder_of_the_file(tmp_path: Path) -> None:
    workspace = tmp_path / "workspaces" / "a1"
    workspace.mkdir(parents=True)
    (workspace / "agent.json").write_text('{"running": {}}', encoding="utf-8")
    assert MemoryCompactionHook.from_agent_json(workspace / "agent.json").workspace == workspace
    explicit = MemoryCompactionHook.from_agent_json(workspace / "agent.json", tmp_path / "w")
    assert explicit.workspace == tmp_path / "w"


async def test_commands_never_reach_the_model_or_the_memory(tmp_path: Path) -> None:
    steps = [text_step("a path is a question"), text_step("not ours")]
    agent, _, model = await build_agent(tmp_path, steps)
    reply = await agent(Msg("user", "/context", "user"))
    assert (reply.get_text_content() or "").startswith("**Context usage**")
    listed = await agent([Msg("user", "/history", "user")])
    assert (listed.get_text_content() or "").startswith("**Context history**")
    assert agent.memory.content == [] and model.calls == []
    answer = await agent(Msg("user", "/etc/hosts holds what?", "user"))
    assert answer.get_text_content() == "a path is a question"
    unknown = await agent(Msg("user", "/nosuchcommand", "user"))
    assert unknown.get_text_content() == "not ours" and len(model.calls) == 2


async def test_a_plain_attach_without_await_keeps_the_input_in_the_window(
    tmp_path: Path,
) -> None:
    """``hook.attach(agent)`` called plainly attaches at once: the history is compacted to
    fit the window and the tools reach the model (issue 17 item 18)."""
    import json
    import warnings

    from copaw_context.core.tokens import make_token_counter

    window = 6000
    model = ScriptedChatModel([text_step("ok")], context_size=window)
    agent = ReActAgent(name="assistant", sys_prompt="sys", model=model, formatter=model.formatter)
    agent.set_console_output_enabled(False)
    for t in range(30):
        await agent.memory.add(Msg("user", f"Request {t}: check m{t}. " + "x" * 1500, "user"))
        await agent.memory.add(Msg("assistant", f"Checked m{t}: " + "y" * 1500, "assistant"))
    hook = MemoryCompactionHook(settings(window, compactor="extractive"), tmp_path)
    counter = make_token_counter("o200k_base")
    history = [m.to_dict() for m in await agent.memory.get_memory()]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "coroutine was never awaited"
        hook.attach(agent)
    await agent(Msg("user", "What next?", "user"))
    sent = counter.count(json.dumps(model.calls[0].formatted))
    assert counter.count(json.dumps(history)) > 2 * window
    assert sent <= window, f"{sent} tokens sent into a {window}-token window"
    assert "read_file" in model.calls[0].tool_names
    assert (await hook.agent_stats(agent))["compactions"] == 1


async def test_from_agent_json_merges_the_settings_file_beside(tmp_path: Path) -> None:
    (tmp_path / "agent.json").write_text('{"running": {"max_input_length": 9000}}', "utf-8")
    (tmp_path / "copaw-context.json").write_text(
        '{"running": {"light_context_config": {"compactor": "extractive"}}}', "utf-8"
    )
    hook = MemoryCompactionHook.from_agent_json(tmp_path / "agent.json")
    assert hook.config.light_context_config.compactor == "extractive"
    assert hook.config.max_input_length == 9000
