"""MemoryCompactionHook details: exempt limits, data blocks, errors, events, TTL, native mode."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from agentscope.message import (
    Base64Source,
    DataBlock,
    TextBlock,
    ToolCallBlock,
    UserMsg,
)
from agentscope.tool import ToolChunk

from copaw_context import ContextEvent, MemoryCompactionHook
from copaw_context.agentscope2 import token_report
from copaw_context.core.config.running import parse_running_config
from copaw_context.core.toolresults.truncation import parse_truncation_notice
from copaw_context.testing import (
    ModelCall,
    ScriptedChatModel,
    scaled_usage,
    text_step,
    tool_calls_step,
)
from tests.helpers import allow, lines_text, make_agent, tool_results, workspace_file

SMALL_LIMITS = {
    "pruning_recent_n": 1,
    "pruning_recent_msg_max_bytes": 4000,
    "pruning_old_msg_max_bytes": 500,
    "exempt_recent_max_bytes": 9000,
    "exempt_old_max_bytes": 2500,
}


def small_config(window: int = 500_000, **light: Any) -> Any:
    return parse_running_config(
        {
            "running": {
                "max_input_length": window,
                "light_context_config": {
                    "token_counter": light.pop("token_counter", "o200k_base"),
                    "compactor": "extractive",
                    "tool_result_pruning_config": {**SMALL_LIMITS, **light.pop("pruning", {})},
                    **light,
                },
            }
        }
    )


def result_text(block: Any) -> str:
    return block.output if isinstance(block.output, str) else block.output[0].text


async def test_markdown_and_exempt_tools_get_larger_limits_in_both_stages(tmp_path: Path) -> None:
    skill = workspace_file(tmp_path, "skills/deploy/SKILL.md", lines_text(300, seed="skill"))
    notes = workspace_file(tmp_path, "notes.txt", lines_text(300, seed="note"))
    big = lines_text(400, seed="agent")

    def chat_with_agent(message: str) -> str:
        """Ask another agent.

        Args:
            message (`str`): The question.
        """
        return big

    hook = MemoryCompactionHook(small_config(pruning={"pruning_batch_ratio": 0}), tmp_path)
    model = ScriptedChatModel(
        [
            tool_calls_step(("read_file", {"file_path": str(skill)})),
            tool_calls_step(("read_file", {"file_path": "notes.txt"})),
            tool_calls_step(("chat_with_agent", {"message": "status?"})),
            tool_calls_step(("read_file", {"file_path": "notes.txt", "end_line": 2})),
            text_step("done"),
        ]
    )
    agent = await make_agent(hook, model, [allow(chat_with_agent)])
    await agent.reply(UserMsg("user", "go"))
    seen = [tool_results(call.messages) for call in model.calls]

    md_fresh, txt_fresh, chat_fresh = (result_text(seen[i][-1]) for i in (1, 2, 3))
    assert 4000 < len(md_fresh.encode()) <= 9000 + 1024  # Markdown: exempt recent limit
    assert len(txt_fresh.encode()) <= 4000 + 1024  # plain file: recent limit
    assert 4000 < len(chat_fresh.encode()) <= 9000 + 1024  # exempt tool name
    final = tool_results(agent.state.context)
    md_old, txt_old, chat_old = (result_text(b) for b in final[:3])
    assert 500 < len(md_old.encode()) <= 2500 + 1024  # Markdown: exempt old limit
    assert len(txt_old.encode()) <= 500 + 1024
    assert 500 < len(chat_old.encode()) <= 2500 + 1024
    # read_file excerpts point at the real files; only chat_with_agent was offloaded.
    assert parse_truncation_notice(md_old)[1].file_path == str(skill.resolve())  # type: ignore[index]
    assert parse_truncation_notice(txt_old)[1].file_path == str(notes.resolve())  # type: ignore[index]
    offloaded = list((tmp_path / "tool_result").glob("*.txt"))  # .refs/: the manifests
    assert len(offloaded) == 1 and offloaded[0].read_text(encoding="utf-8") == big
    assert skill.read_text(encoding="utf-8") == lines_text(300, seed="skill")
    assert notes.read_text(encoding="utf-8") == lines_text(300, seed="note")


async def test_data_blocks_are_never_touched(tmp_path: Path) -> None:
    image = DataBlock(source=Base64Source(data="iVBORw0KGgo" * 4000, media_type="image/png"))
    caption = "caption line\n" * 2000

    def screenshot(url: str) -> ToolChunk:
        """Take a screenshot.

        Args:
            url (`str`): The page.
        """
        return ToolChunk(content=[image.model_copy(deep=True), TextBlock(text=caption)])

    hook = MemoryCompactionHook(small_config(), tmp_path)
    model = ScriptedChatModel(
        [
            tool_calls_step(("screenshot", {"url": "a"})),
            tool_calls_step(("screenshot", {"url": "b"})),
            text_step("done"),
        ]
    )
    agent = await make_agent(hook, model, [allow(screenshot)])
    await agent.reply(UserMsg("user", "shoot"))
    for block in tool_results(agent.state.context):
        assert isinstance(block.output, list)
        data = [b for b in block.output if isinstance(b, DataBlock)]
        assert len(data) == 1 and data[0].source.data == image.source.data  # type: ignore[union-attr]
        text = next(b.text for b in block.output if isinstance(b, TextBlock))
        assert "<<<TRUNCATED>>>" in text


async def test_read_file_errors_are_tool_text_and_the_reply_goes_on(tmp_path: Path) -> None:
    outside = tmp_path.parent / "outside-secret.txt"
    outside.write_text("TOP-SECRET-CONTENT")
    hook = MemoryCompactionHook(small_config(), tmp_path / "ws")
    model = ScriptedChatModel(
        [
            tool_calls_step(
                ("read_file", {"file_path": "missing.txt"}),
                ("read_file", {"file_path": str(outside)}),
                ("read_file", {"file_path": ".", "start_line": 3}),
            ),
            text_step("handled"),
        ]
    )
    agent = await make_agent(hook, model)
    reply = await agent.reply(UserMsg("user", "read"))
    assert reply.get_text_content() == "handled"
    texts = [result_text(b) for b in tool_results(agent.state.context)]
    assert all(t.startswith("Error:") for t in texts), texts
    assert "TOP-SECRET-CONTENT" not in "".join(texts)
    assert [b.state for b in tool_results(agent.state.context)] == ["error"] * 3


async def test_warning_event_once_when_fixed_parts_exceed_threshold(tmp_path: Path) -> None:
    events: list[ContextEvent] = []
    hook = MemoryCompactionHook(small_config(window=2000), tmp_path, on_event=events.append)
    model = ScriptedChatModel([text_step("one"), text_step("two")])
    agent = await make_agent(hook, model, system_prompt="Rules. " * 900)
    await agent.reply(UserMsg("user", "first"))
    await agent.reply(UserMsg("user", "second"))
    warnings = [e.message for e in events if e.kind == "warning"]
    # Once each: the threshold, and (the memory tools' schemas on top) the window itself.
    assert len(warnings) == 2, warnings
    assert sum("alone reach the compaction threshold" in w for w in warnings) == 1
    assert sum("alone exceed the 2000-token window" in w for w in warnings) == 1
    assert [m.get_text_content() for m in agent.state.context if m.role == "user"][-1] == "second"


async def test_new_command_archives_and_starts_a_new_session(tmp_path: Path) -> None:
    hook = MemoryCompactionHook(small_config(), tmp_path)
    agent = await make_agent(hook, ScriptedChatModel([text_step("hi")]))
    await agent.reply(UserMsg("user", "hello"))
    old_session = agent.state.session_id
    reply = await agent.reply(UserMsg("user", "/new"))
    assert "2 message(s) archived" in (reply.get_text_content() or "")
    assert agent.state.session_id != old_session and agent.state.context == []
    lines = (tmp_path / "dialog").glob("*.jsonl")
    records = [json.loads(line) for path in lines for line in path.read_text().splitlines()]
    assert {r["session_id"] for r in records} == {old_session}
    assert [r["message"]["role"] for r in records] == ["user", "assistant"]


async def test_paths_that_look_like_commands_are_ordinary_input(tmp_path: Path) -> None:
    hook = MemoryCompactionHook(small_config(), tmp_path)
    agent = await make_agent(hook, ScriptedChatModel([text_step("it is a hosts file")]))
    reply = await agent.reply(UserMsg("user", "/etc/hosts what is this?"))
    assert reply.get_text_content() == "it is a hosts file"


async def test_estimate_is_calibrated_by_reported_usage(tmp_path: Path) -> None:
    hook = MemoryCompactionHook(small_config(token_counter="estimate"), tmp_path)
    model = ScriptedChatModel([text_step("a"), text_step("b")], usage=scaled_usage(2.0))
    agent = await make_agent(hook, model)
    await agent.reply(UserMsg("user", "hello"))
    assert (await hook.calibration_for(agent)).factor > 1.0
    report = await token_report(hook, agent)
    raw = report.fixed + report.messages
    assert report.total == round(raw * report.calibration) and report.total > raw
    text = (await agent.reply(UserMsg("user", "/context"))).get_text_content() or ""
    assert "calibration x" in text and "Window: 500000 tokens" in text


async def test_expired_offloads_are_cleaned_unless_referenced(tmp_path: Path) -> None:
    cache = tmp_path / "tool_result"
    cache.mkdir()
    expired, referenced = cache / ("a" * 32 + ".txt"), cache / ("b" * 32 + ".txt")
    foreign = cache / "keep-me.txt"
    for path in (expired, referenced, foreign):
        path.write_text("old")
        old = time.time() - 30 * 86400
        os.utime(path, (old, old))
    hook = MemoryCompactionHook(small_config(), tmp_path)
    agent = await make_agent(hook, ScriptedChatModel([text_step("ok")]))
    notice = f'call `read_file` with file_path="{referenced}" start_line=2 to read more.'
    agent.state.context = [
        UserMsg("user", "earlier"),
    ]
    agent.state.summary = f"Saved output: {notice}"
    await agent.reply(UserMsg("user", "now"))
    assert not expired.exists()
    assert referenced.exists() and foreign.exists()


async def test_native_backend_leaves_builtin_compression_in_charge(tmp_path: Path) -> None:
    big = "payload line\n" * 8000

    def dump(name: str) -> str:
        """Dump a table.

        Args:
            name (`str`): The table.
        """
        return big

    def answer(call: ModelCall) -> list[Any]:
        if call.tool_names == ["generate_structured_output"]:
            fields = call.tools[0]["function"]["parameters"]["properties"]
            return [
                ToolCallBlock(
                    id="summary_1",
                    name="generate_structured_output",
                    input=json.dumps({key: "x" for key in fields}),
                )
            ]
        return text_step("done")

    native = parse_running_config({"running": {"context_manager_backend": "native"}})
    hook = MemoryCompactionHook(native, tmp_path)
    model = ScriptedChatModel(
        [tool_calls_step(("dump", {"name": "t"})), answer, answer, answer], context_size=6000
    )
    agent = await make_agent(hook, model, [allow(dump)])
    await agent.reply(UserMsg("user", "dump it"))
    assert not (tmp_path / "tool_result").exists(), "native mode must not offload"
    assert not (tmp_path / "dialog").exists(), "native mode must not archive"
    assert any(call.tool_names == ["generate_structured_output"] for call in model.calls)
    assert agent.state.summary  # written by AgentScope's own compression


async def test_builtin_tool_result_cut_does_not_mangle_our_notice(tmp_path: Path) -> None:
    from agentscope.agent import Agent, ContextConfig, InjectionConfig
    from agentscope.tool import Toolkit

    big = lines_text(2000, seed="row")

    def dump(name: str) -> str:
        """Dump a table.

        Args:
            name (`str`): The table.
        """
        return big

    hook = MemoryCompactionHook(small_config(), tmp_path)
    model = ScriptedChatModel([tool_calls_step(("dump", {"name": "t"})), text_step("ok")])
    agent = Agent(
        name="assistant",
        system_prompt="sys",
        model=model,
        toolkit=Toolkit(tools=[*await hook.list_tools(), allow(dump)]),
        middlewares=[hook],
        context_config=ContextConfig(tool_result_limit=200),
        injection_config=InjectionConfig(inject_runtime_state=False),
    )
    await agent.reply(UserMsg("user", "dump"))
    (block,) = tool_results(agent.state.context)
    parsed = parse_truncation_notice(result_text(block))
    assert parsed is not None, "AgentScope's own cut must not land after our notice"
    saved = Path(parsed[1].file_path or "")
    assert saved.read_text(encoding="utf-8") == big


async def test_command_replies_stream_like_model_replies(tmp_path: Path) -> None:
    from agentscope.event import ReplyEndEvent, ReplyStartEvent, TextBlockDeltaEvent

    hook = MemoryCompactionHook(small_config(), tmp_path)
    agent = await make_agent(hook, ScriptedChatModel())
    events = [e async for e in agent.reply_stream(UserMsg("user", "/context"))]
    assert isinstance(events[0], ReplyStartEvent) and isinstance(events[-1], ReplyEndEvent)
    text = "".join(e.delta for e in events if isinstance(e, TextBlockDeltaEvent))
    assert text.startswith("**Context usage**")


async def test_clear_refuses_while_a_tool_call_awaits_confirmation(tmp_path: Path) -> None:
    from agentscope.tool import FunctionTool

    def deploy(env: str) -> str:
        """Deploy.

        Args:
            env (`str`): Where to.
        """
        return "deployed"

    hook = MemoryCompactionHook(small_config(), tmp_path)
    model = ScriptedChatModel([tool_calls_step(("deploy", {"env": "prod"}))])
    agent = await make_agent(hook, model, [FunctionTool(deploy)])  # default permission: ASK
    await agent.reply(UserMsg("user", "deploy please"))
    assert agent.state.has_awaiting_tool_calls(agent.name)
    reply = await agent.reply(UserMsg("user", "/clear"))
    assert (reply.get_text_content() or "").startswith("**Not cleared.**")
    assert agent.state.has_awaiting_tool_calls(agent.name)
    assert not (tmp_path / "dialog").exists()


async def test_thinking_counts_only_when_the_formatter_sends_it(tmp_path: Path) -> None:
    from agentscope.message import AssistantMsg, ThinkingBlock

    hook = MemoryCompactionHook(small_config(), tmp_path)
    agent = await make_agent(hook, ScriptedChatModel())
    agent.state.context = [
        UserMsg("user", "q"),
        AssistantMsg(
            "assistant", [ThinkingBlock(thinking="deep thought " * 3000), TextBlock(text="a")]
        ),
    ]
    report = await token_report(hook, agent)
    assert report.messages < 100, "OpenAI-style formatters drop thinking; it must not be counted"


async def test_usage_calibrates_only_approximate_counters(tmp_path: Path) -> None:
    for model_name, expected in (("claude-sonnet-4", True), ("gpt-4o", False), ("qwen-max", False)):
        hook = MemoryCompactionHook(small_config(token_counter="auto"), tmp_path / model_name)
        model = ScriptedChatModel([text_step("a")], model_name=model_name, usage=scaled_usage(2.2))
        agent = await make_agent(hook, model)
        await agent.reply(UserMsg("user", "hello"))
        assert await hook.calibrates(agent) is expected
        report = await token_report(hook, agent)
        assert (report.calibration > 1.0) is expected


async def test_agent_model_compactor_uses_the_configured_window(tmp_path: Path) -> None:
    from copaw_context.core.tokens import make_token_counter

    counter = make_token_counter("o200k_base")
    sizes: list[int] = []

    def step(call: ModelCall) -> list[Any]:
        if not call.tools:  # the compactor agent has no tools
            sizes.append(sum(counter.count(m.get_text_content() or "") for m in call.messages))
            return text_step("## Goal\n- g")  # invalid: falls back to extractive
        return text_step("answer")

    cfg = small_config(window=4000, compactor="llm")
    hook = MemoryCompactionHook(cfg, tmp_path)
    model = ScriptedChatModel([step] * 30, context_size=128_000)
    agent = await make_agent(hook, model)
    agent.state.context = [UserMsg("user", f"note {i}: " + "word " * 300) for i in range(12)]
    await agent.reply(UserMsg("user", "/compact"))
    assert sizes and max(sizes) < 4000


async def test_compaction_clears_read_caches_of_removed_results_and_aligns_hint(
    tmp_path: Path,
) -> None:
    from agentscope.state._state import ReadCacheEntry

    hook = MemoryCompactionHook(small_config(window=3000), tmp_path)
    model = ScriptedChatModel([text_step("ok")], context_size=100_000)
    agent = await make_agent(hook, model)
    agent.state.tool_context.read_file_cache = [
        ReadCacheEntry(lines=["x"], updated_at=time.time(), bytes=1, file_path="/ws/app.py")
    ]
    agent.state.context = [UserMsg("user", f"note {i}: " + "word " * 300) for i in range(8)]
    await agent.reply(UserMsg("user", "go on"))
    assert (tmp_path / "dialog").exists()
    assert agent.state.tool_context.read_file_cache == []
    assert (
        agent.context_config.trigger_ratio == hook.config.compact_threshold_tokens(3000) / 100_000
    )


async def test_the_model_call_check_reuses_the_calls_own_input(tmp_path: Path) -> None:
    """The system prompt and tool schemas are taken from the model call being made; the
    model input is not prepared a second time for the measurement."""
    hook = MemoryCompactionHook(small_config(), tmp_path)
    agent = await make_agent(hook, ScriptedChatModel([text_step("one"), text_step("two")]))
    prepare = agent._prepare_model_input
    measure = hook.engine.input_meter.measure
    inside: list[bool] = [False]
    prepared_inside: list[int] = []

    async def counting_prepare() -> Any:
        if inside[0]:
            prepared_inside.append(1)
        return await prepare()

    async def flagged_measure(session: Any) -> Any:
        inside[0] = True
        try:
            return await measure(session)
        finally:
            inside[0] = False

    agent._prepare_model_input = counting_prepare
    hook.engine.input_meter.measure = flagged_measure  # type: ignore[method-assign]
    await agent.reply(UserMsg("user", "first"))
    await agent.reply(UserMsg("user", "second"))
    stats = await hook.agent_stats(agent)
    report = await hook.report(agent)
    assert prepared_inside == []
    assert stats["last_prompt_tokens"] > report.tools > 0
