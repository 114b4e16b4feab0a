"""AgentScope 2.x: status lines in the reply stream, the workspace of an agent.json, attach."""

from __future__ import annotations

from pathlib import Path

import pytest
from agentscope.agent import Agent, InjectionConfig
from agentscope.event import CustomEvent
from agentscope.message import UserMsg

from copaw_context import MemoryCompactionHook
from copaw_context.agentscope2.stream import STATUS_EVENT
from copaw_context.core.config.running import parse_running_config
from copaw_context.testing import ScriptedChatModel, text_step
from tests.agent_history import seeded_history
from tests.helpers import make_agent


async def test_status_lines_arrive_in_the_reply_stream(tmp_path: Path) -> None:
    config = parse_running_config(
        {
            "running": {
                "max_input_length": 4000,
                "memory": {"enabled": False},
                "light_context_config": {"compactor": "extractive", "show_status": True},
            }
        }
    )
    hook = MemoryCompactionHook(config, tmp_path)
    agent = await make_agent(hook, ScriptedChatModel([text_step("ok")], context_size=4000))
    agent.state.context = seeded_history(8)
    events = [e async for e in agent.reply_stream(UserMsg("user", "What next?"))]
    lines = [e.value["text"] for e in events if isinstance(e, CustomEvent)]
    assert all(e.name == STATUS_EVENT for e in events if isinstance(e, CustomEvent))
    assert len(lines) == 2
    assert lines[0].startswith("🔄 Context compaction started...")
    assert lines[1].startswith("✅ Context compaction completed!")


async def test_from_agent_json_uses_the_folder_of_the_file(tmp_path: Path) -> None:
    workspace = tmp_path / "workspaces" / "a1"
    workspace.mkdir(parents=True)
    (workspace / "agent.json").write_text('{"running": {}}', encoding="utf-8")
    hook = MemoryCompactionHook.from_agent_json(workspace / "agent.json")
    assert hook.workspace == workspace.resolve()
    other = tmp_path / "elsewhere"
    explicit = MemoryCompactionHook.from_agent_json(workspace / "agent.json", other)
    assert explicit.workspace == other.resolve()


async def test_hook_attach_works_on_a_built_agent(tmp_path: Path) -> None:
    model = ScriptedChatModel([text_step("ok")])
    agent = Agent(
        name="a",
        system_prompt="sys",
        model=model,
        injection_config=InjectionConfig(inject_runtime_state=False),
    )
    hook = MemoryCompactionHook(parse_running_config({"running": {}}), tmp_path)
    assert await hook.attach(agent) is hook
    await agent.reply(UserMsg("user", "hi"))
    assert "read_file" in model.calls[0].tool_names


async def test_the_cli_chat_shows_status_lines(tmp_path: Path) -> None:
    import io

    from copaw_context.cli.chat import run_chat
    from copaw_context.testing import tool_calls_step

    config = parse_running_config(
        {
            "running": {
                "max_input_length": 3000,
                "memory": {"enabled": False},
                "light_context_config": {"compactor": "extractive"},
            }
        }
    )
    steps = []
    for n in range(6):
        steps += [tool_calls_step(("read_file", {"file_path": "log.txt"})), text_step(f"done {n}")]
    (tmp_path / "log.txt").write_text("build log line\n" * 200, encoding="utf-8")
    stdin = io.StringIO("".join(f"question {n}\n" for n in range(6)) + "/context\n/exit\n")
    stdout = io.StringIO()
    model = ScriptedChatModel(steps, context_size=3000)
    assert (
        await run_chat(
            config, str(tmp_path), model_name="x", stdin=stdin, stdout=stdout, model=model
        )
        == 0
    )
    out = stdout.getvalue()
    assert "[context] 🔄 Context compaction started..." in out
    assert "[context] ✅ Context compaction completed!" in out
    assert "assistant> done 5" in out and "**Context usage**" in out


async def test_a_plain_attach_without_await_keeps_the_input_in_the_window(
    tmp_path: Path,
) -> None:
    """``hook.attach(agent)`` called plainly (the design card's one line) attaches: the
    history is compacted to fit and the tools reach the model (issue 17 item 18)."""
    import json
    import warnings

    from copaw_context.core.tokens import make_token_counter

    window = 6000
    config = parse_running_config(
        {
            "running": {
                "max_input_length": window,
                "memory": {"enabled": False},
                "light_context_config": {"compactor": "extractive", "token_counter": "o200k_base"},
            }
        }
    )
    model = ScriptedChatModel([text_step("ok")], context_size=window)
    agent = Agent(
        name="a",
        system_prompt="sys",
        model=model,
        injection_config=InjectionConfig(inject_runtime_state=False),
    )
    agent.state.context = seeded_history(30)
    hook = MemoryCompactionHook(config, tmp_path)
    counter = make_token_counter("o200k_base")
    history_tokens = counter.count(json.dumps([m.model_dump() for m in agent.state.context]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "coroutine was never awaited"
        hook.attach(agent)
    await agent.reply(UserMsg("user", "What next?"))
    sent = counter.count(json.dumps(model.calls[0].formatted))
    assert history_tokens > 2 * window
    assert sent <= window, f"{sent} tokens sent into a {window}-token window"
    assert "read_file" in model.calls[0].tool_names
    assert (await hook.agent_stats(agent))["compactions"] == 1


async def test_the_cli_chat_closes_the_hook_at_exit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``/exit`` closes the hook, so memory summaries still running are written (item 20)."""
    import io

    from copaw_context.cli import chat

    closed: list[int] = []

    class Spied(MemoryCompactionHook):
        async def close(self) -> None:
            closed.append(self.pending)
            await super().close()

    monkeypatch.setattr(chat, "MemoryCompactionHook", Spied)
    config = parse_running_config({"running": {"memory": {"enabled": False}}})
    model = ScriptedChatModel([text_step("hello")])
    stdin, stdout = io.StringIO("hi\n/exit\n"), io.StringIO()
    assert (
        await chat.run_chat(
            config, str(tmp_path), model_name="x", stdin=stdin, stdout=stdout, model=model
        )
        == 0
    )
    assert closed == [0] and "assistant> hello" in stdout.getvalue()


async def test_from_agent_json_merges_the_settings_file_beside(tmp_path: Path) -> None:
    (tmp_path / "agent.json").write_text('{"running": {"max_input_length": 9000}}', "utf-8")
    (tmp_path / "copaw-context.json").write_text(
        '{"running": {"light_context_config": {"compactor": "extractive"}}}', "utf-8"
    )
    hook = MemoryCompactionHook.from_agent_json(tmp_path / "agent.json")
    assert hook.config.light_context_config.compactor == "extractive"
    assert hook.config.max_input_length == 9000
