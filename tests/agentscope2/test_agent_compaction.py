"""Compaction with real AgentScope 2.x agents and the scripted model (issue: compaction #8)."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from agentscope.message import Msg, UserMsg
from agentscope.middleware import MiddlewareBase

from copaw_context import ContextEvent, MemoryCompactionHook, attach, pin_message
from copaw_context.cli.demo import demo_policy, make_demo_tools
from copaw_context.core.config.running import parse_running_config
from copaw_context.core.summary import find_junk, render_summary_message, split_summary_message
from copaw_context.testing import (
    ModelCall,
    ScriptedChatModel,
    openai_pairing_problems,
    text_step,
    tool_calls_step,
)
from tests.agent_history import archived_block_keys, block_keys, config, seeded_history
from tests.helpers import allow, make_agent
from tests.summaries import PREVIOUS_SUMMARY


async def test_200_step_session_stays_valid_and_loses_nothing(tmp_path: Path) -> None:
    events: list[ContextEvent] = []
    hook = MemoryCompactionHook(config(6000, compactor="llm"), tmp_path, on_event=events.append)
    policy = demo_policy(200, parallel_every=4)
    model = ScriptedChatModel([policy] * 900, context_size=6000)
    agent = await make_agent(hook, model, make_demo_tools(seed=3))
    for turn in policy.user_turns():
        reply = await agent.reply(UserMsg("user", turn))
        assert reply.get_text_content()
    assert policy.done and policy.parallel_steps >= 10

    seen: set[tuple[str, str]] = set()
    for call in model.calls:
        if not call.tools:
            continue  # the compactor's own calls
        assert openai_pairing_problems(call.formatted) == [], call.formatted[-3:]
        seen.update(block_keys([m for m in call.messages if not _is_fixed(m)]))
    compactions = [e for e in events if e.kind == "compaction"]
    assert len(compactions) >= 5
    assert all(e.tokens_after < e.tokens_before for e in compactions)

    archived = archived_block_keys(tmp_path)
    final = block_keys(agent.state.context)
    assert len(archived) == len(set(archived)), "a block was archived twice"
    assert not set(archived) & set(final), "a block is both archived and still in context"
    assert seen <= set(archived) | set(final), "a block left the context without being archived"
    summary = str(agent.state.summary)
    assert summary.count("## Goal") == 1, "the summary must be merged, not nested"
    assert "dialog/" in summary and ".jsonl" in summary


def _is_fixed(msg: Msg) -> bool:
    """The system prompt or the summary message (rebuilt by the agent at every call)."""
    text = msg.get_text_content() or ""
    return msg.role == "system" or ("## Goal" in text and "dialog/" in text)


async def _compact_with_failing_compactor(
    tmp_path: Path, step: Any, **light: Any
) -> tuple[Any, list[ContextEvent]]:
    events: list[ContextEvent] = []
    compactor = ScriptedChatModel([step, step, step], context_size=32768)
    hook = MemoryCompactionHook(
        config(4000, compactor="llm", **light),
        tmp_path,
        compactor_model=compactor,
        on_event=events.append,
    )
    hook.compactor_retry_delay = 0.001  # a raising compactor is retried; keep the pause short
    agent = await make_agent(
        hook, ScriptedChatModel([text_step("still working")], context_size=4000)
    )
    agent.state.context = seeded_history(8)
    agent.state.summary = render_summary_message(
        PREVIOUS_SUMMARY, [("dialog/2026-11-28.jsonl", 12)]
    )
    reply = await agent.reply(UserMsg("user", "What next?"))
    assert reply.get_text_content() == "still working"
    return agent, events


def _assert_previous_summary_kept(agent: Any) -> None:
    summary = str(agent.state.summary)
    for item in (
        "Ship the parser fix for ticket PARSE-17",
        "Never modify vendor/ files",
        "Reproduced the crash in src/parser.c",
        "Keep the public API unchanged",
        "/repo/src/parser.c:412 is where tok is undeclared",
    ):
        assert item in summary, f"previous summary item lost: {item}"
    assert summary.count("## Goal") == 1


async def test_compactor_exception_keeps_previous_summary(tmp_path: Path) -> None:
    agent, events = await _compact_with_failing_compactor(tmp_path, RuntimeError("provider 500"))
    _assert_previous_summary_kept(agent)
    (event,) = [e for e in events if e.kind == "compaction"]
    assert event.method == "extractive" and "provider 500" in (event.fallback_reason or "")


async def test_compactor_empty_reply_keeps_previous_summary(tmp_path: Path) -> None:
    agent, events = await _compact_with_failing_compactor(tmp_path, text_step(""))
    _assert_previous_summary_kept(agent)
    assert "empty" in ([e for e in events if e.kind == "compaction"][0].fallback_reason or "")


async def test_compactor_missing_sections_keeps_previous_summary(tmp_path: Path) -> None:
    agent, events = await _compact_with_failing_compactor(
        tmp_path, text_step("## Hello!\nNice chat.")
    )
    _assert_previous_summary_kept(agent)
    assert "missing" in ([e for e in events if e.kind == "compaction"][0].fallback_reason or "")


async def test_compactor_timeout_keeps_previous_summary(tmp_path: Path) -> None:
    async def slow(call: ModelCall) -> list[Any]:
        await asyncio.sleep(30)
        return text_step("too late")

    agent, events = await _compact_with_failing_compactor(
        tmp_path, slow, compactor_timeout_seconds=0.2
    )
    _assert_previous_summary_kept(agent)
    assert "timed out" in ([e for e in events if e.kind == "compaction"][0].fallback_reason or "")


async def test_the_compaction_event_counts_junk_lines_and_states_the_budget(
    tmp_path: Path,
) -> None:
    reply = PREVIOUS_SUMMARY.replace(
        "- Keep the public API unchanged", "- Keep the public API unchanged\n- <decision - reason>"
    ).replace("1. Run the full test suite", "1. Run the full test suite\n- (none)")
    agent, events = await _compact_with_failing_compactor(tmp_path, text_step(reply))
    (event,) = [e for e in events if e.kind == "compaction"]
    assert event.method == "llm" and event.fallback_reason is None
    # the template slot and the stray "(none)" go; the decision without a reason is no
    # Key Decision any more (it moves to Critical Context): each counted by its reason
    assert event.summary_dropped_lines == 3
    assert event.summary_dropped_by_reason == {"placeholder": 2, "no_reason": 1}
    assert event.summary_budget_chars >= 1000
    assert event.as_dict()["summary_dropped_lines"] == 3
    assert event.as_dict()["summary_dropped_by_reason"] == {"placeholder": 2, "no_reason": 1}
    summary = str(agent.state.summary)
    assert "<decision - reason>" not in summary
    assert "1. Run the full test suite\n- (none)" not in summary
    assert find_junk(split_summary_message(summary)) == []  # no junk line left at all
    assert "- Keep the public API unchanged" in summary


async def test_compact_command_end_to_end(tmp_path: Path) -> None:
    requests: list[str] = []

    def summarise(call: ModelCall) -> list[Any]:
        requests.append(call.messages[-1].get_text_content() or "")
        return text_step(PREVIOUS_SUMMARY)

    compactor = ScriptedChatModel([summarise])
    hook = MemoryCompactionHook(
        config(200_000, compactor="llm"), tmp_path, compactor_model=compactor
    )
    model = ScriptedChatModel([text_step("next answer")])
    agent = await make_agent(hook, model)
    empty = await agent.reply(UserMsg("user", "/compact"))
    assert "No messages to compact" in (empty.get_text_content() or "")

    agent.state.context = seeded_history(5)
    reply = await agent.reply(UserMsg("user", "/compact only keep requirements and decisions"))
    text = reply.get_text_content() or ""
    assert text.startswith("**Compact Complete!**")
    # the last turn is answered: its request goes with its answer (10 = 5 requests + 5 replies)
    assert "- Messages compacted: 10" in text
    assert " -> " in text and "**Compressed Summary:**" in text
    assert "Ship the parser fix for ticket PARSE-17" in text
    assert "only keep requirements and decisions" in requests[0]
    assert "Request 4" in requests[0] and "Module m4 builds." in requests[0]
    assert agent.state.context == []
    assert len(archived_block_keys(tmp_path)) == 5 * 4 + 5  # 5 replies x 4 blocks + 5 requests
    compactor.assert_complete()

    # the next input shows no open request: only the summary and the new question
    next_reply = await agent.reply(UserMsg("user", "what next?"))
    assert next_reply.get_text_content() == "next answer"
    sent = model.calls[-1].formatted
    users = [str(m.get("content")) for m in sent if m.get("role") == "user"]
    assert not any("Request 4" in u for u in users) and "what next?" in users[-1]
    agent.state.context = agent.state.context[:1]  # keep the question for /clear below

    context = await agent.reply(UserMsg("user", "/context"))
    assert "Window: 200000 tokens (from running.max_input_length)" in (
        context.get_text_content() or ""
    )
    cleared = await agent.reply(UserMsg("user", "/clear"))
    assert "1 message(s) archived" in (cleared.get_text_content() or "")
    assert agent.state.context == [] and agent.state.summary == ""


async def test_an_unwritable_archive_loses_nothing_and_keeps_the_window(tmp_path: Path) -> None:
    """The compacted messages wait whole in the session state until the archive is writable."""
    blocker = tmp_path / "dialog"
    blocker.write_text("not a directory")
    events: list[ContextEvent] = []
    hook = MemoryCompactionHook(
        config(4000, compactor="extractive"), tmp_path, on_event=events.append
    )
    model = ScriptedChatModel([text_step("fine"), text_step("still fine")], context_size=4000)
    agent = await make_agent(hook, model)
    history = seeded_history(8)
    agent.state.context = list(history)
    reply = await agent.reply(UserMsg("user", "continue"))
    assert reply.get_text_content() == "fine"
    assert any(e.kind == "archive_deferred" for e in events)
    report = await hook.report(agent)
    assert report.total <= report.threshold, "the context still compacts"
    saved_state = agent.state.model_dump_json()  # the pending buffer is saved with the session
    pending = json.loads(saved_state)["middle_context"][await hook.get_middleware_key()][
        "pending_archive"
    ]
    in_context = set(block_keys(agent.state.context))
    pending_keys = {
        (b.type, b.id) for r in pending for b in Msg.model_validate(r["message"]).content
    }
    assert set(block_keys(history)) <= in_context | pending_keys, "a message was lost"

    blocker.unlink()  # the disk is back
    hook.engine.context.scratch(await hook.session(agent)).pending_tried = None
    await agent.reply(UserMsg("user", "and now?"))
    assert any(e.kind == "archive_flushed" for e in events)
    assert set(block_keys(history)) <= set(archived_block_keys(tmp_path)) | set(
        block_keys(agent.state.context)
    )
    key = await hook.get_middleware_key()
    assert "pending_archive" not in agent.state.middle_context[key]


async def test_no_compaction_storm_when_pinned_content_fills_the_window(tmp_path: Path) -> None:
    calls: list[int] = []

    def summarise(call: ModelCall) -> list[Any]:
        calls.append(1)
        return text_step(PREVIOUS_SUMMARY)

    compactor = ScriptedChatModel([summarise] * 20)
    hook = MemoryCompactionHook(config(3000, compactor="llm"), tmp_path, compactor_model=compactor)
    model = ScriptedChatModel([text_step(f"answer {i}") for i in range(6)], context_size=3000)
    agent = await make_agent(hook, model)
    big = pin_message(UserMsg("user", "Reference material: " + "pinned fact. " * 900))
    agent.state.context = [big, *seeded_history(3, result_bytes=400)]
    for i in range(6):
        await agent.reply(UserMsg("user", f"question {i}"))
    assert big in agent.state.context
    assert len(calls) <= 2, f"the compactor was called {len(calls)} times for 6 steps"


async def test_latest_request_over_reserve_is_truncated_not_summarised(tmp_path: Path) -> None:
    hook = MemoryCompactionHook(config(3000, compactor="extractive"), tmp_path)
    model = ScriptedChatModel([text_step("done")], context_size=3000)
    agent = await make_agent(hook, model)
    agent.state.context = seeded_history(3, result_bytes=400)
    request = "Please analyse this log:\n" + "".join(f"log line {i}\n" for i in range(3000))
    await agent.reply(UserMsg("user", request))
    users = [m for m in agent.state.context if m.role == "user"]
    assert users and users[-1].get_text_content() != request
    text = users[-1].get_text_content() or ""
    assert "<<<TRUNCATED>>>" in text
    # The full request is kept with the archive, where TTL cleanup never looks.
    saved = list((tmp_path / "dialog" / "requests").iterdir())
    assert [p.read_text(encoding="utf-8") for p in saved] == [request]
    assert str(saved[0]) in text


async def test_attach_to_built_agent_and_native_backend(tmp_path: Path) -> None:
    from agentscope.agent import Agent, InjectionConfig

    model = ScriptedChatModel([text_step("ok")])
    agent = Agent(
        name="a",
        system_prompt="sys",
        model=model,
        injection_config=InjectionConfig(inject_runtime_state=False),
    )
    hook = MemoryCompactionHook(config(200_000), tmp_path)
    await attach(agent, hook)
    await attach(agent, hook)
    assert agent._compress_context_middlewares == [hook]
    assert await agent.toolkit.get_tool("read_file") is not None
    await agent.reply(UserMsg("user", "hi"))
    assert [t["function"]["name"] for t in model.calls[0].tools] == [
        "read_file",
        "memory_append_log",
        "memory_edit",
        "memory_search",
    ]

    native = MemoryCompactionHook(
        parse_running_config({"running": {"context_manager_backend": "native"}}), tmp_path
    )
    assert not native.is_light


async def test_compactor_input_is_staged_to_fit_its_own_window(tmp_path: Path) -> None:
    from copaw_context.core.tokens import make_token_counter

    counter = make_token_counter("o200k_base")
    prompts: list[int] = []

    def summarise(call: ModelCall) -> list[Any]:
        prompts.append(sum(counter.count(m.get_text_content() or "") for m in call.messages))
        return text_step(PREVIOUS_SUMMARY)

    compactor = ScriptedChatModel([summarise] * 20, context_size=2500)
    hook = MemoryCompactionHook(
        config(200_000, compactor="llm"), tmp_path, compactor_model=compactor
    )
    agent = await make_agent(hook, ScriptedChatModel([text_step("unused")]))
    agent.state.context = seeded_history(12, result_bytes=2000)
    reply = await agent.reply(UserMsg("user", "/compact"))
    assert (reply.get_text_content() or "").startswith("**Compact Complete!**")
    assert len(prompts) >= 2, (
        "a transcript larger than the compactor's window is summarised in stages"
    )
    assert max(prompts) < 2500
    assert str(agent.state.summary).count("## Goal") == 1


async def test_servers_that_reuse_tool_call_ids_stay_valid(tmp_path: Path) -> None:
    from agentscope.message import ToolCallBlock as Call

    def build(target: str) -> str:
        """Build a target.

        Args:
            target (`str`): What to build.
        """
        return f"built {target}\n" + "log line\n" * 300

    steps: list[Any] = []
    for turn in range(6):
        steps.append([Call(id="call_0", name="build", input=json.dumps({"target": f"t{turn}"}))])
        steps.append(text_step(f"turn {turn} done"))
    hook = MemoryCompactionHook(config(3000, compactor="extractive"), tmp_path)
    model = ScriptedChatModel(steps, context_size=3000)
    agent = await make_agent(hook, model, [allow(build)])
    for turn in range(6):
        reply = await agent.reply(UserMsg("user", f"request {turn}"))
        assert reply.get_text_content() == f"turn {turn} done"
        assert agent.state.context[0].get_text_content() != "" and any(
            m.get_text_content() == f"request {turn}" for m in agent.state.context
        ), "the latest request must survive compaction"
    for call in model.calls:
        assert openai_pairing_problems(call.formatted) == []
    assert (tmp_path / "dialog").exists()


async def test_llm_summary_that_drops_previous_items_gets_them_back(tmp_path: Path) -> None:
    forgetful = """## Goal
- Check the modules

## Constraints & Preferences
- (none)

## Progress
### Done
- [x] Built m0 to m7
### In Progress
- [ ] Nothing
### Blocked
- (none)

## Key Decisions
- Build each module separately

## Next Steps
1. Answer the user

## Critical Context
- All builds passed"""
    agent, events = await _compact_with_failing_compactor(tmp_path, text_step(forgetful))
    (event,) = [e for e in events if e.kind == "compaction"]
    assert event.method == "llm" and event.fallback_reason is None
    summary = str(agent.state.summary)
    for item in (
        "Ship the parser fix for ticket PARSE-17",
        "Never modify vendor/ files",
        "/repo/src/parser.c:412 is where tok is undeclared",
        "Build each module separately",
    ):
        assert item in summary
    assert summary.count("## Goal") == 1


async def test_error_printed_at_the_end_of_an_offloaded_log_reaches_the_summary(
    tmp_path: Path,
) -> None:
    error = "src/parser.c:412:17: error: 'tok' undeclared (first use in this function)"
    log = "".join(f"cc -c src/file{i}.c -o file{i}.o\n" for i in range(4000)) + error + "\n"
    log += "make: *** [Makefile:23: parser.o] Error 1\n"

    def run_build(target: str) -> str:
        """Run a build.

        Args:
            target (`str`): The make target.
        """
        return log

    hook = MemoryCompactionHook(config(200_000, compactor="extractive"), tmp_path)
    model = ScriptedChatModel(
        [tool_calls_step(("run_build", {"target": "all"})), text_step("The build fails.")]
    )
    agent = await make_agent(hook, model, [allow(run_build)])
    await agent.reply(UserMsg("user", "Why is CI red?"))
    excerpt = str(agent.state.context)
    assert error not in excerpt, "the excerpt in the context holds only the head of the log"
    reply = await agent.reply(UserMsg("user", "/compact"))
    summary = reply.get_text_content() or ""
    assert error in summary
    # the error block keeps the error, not make's wrapper around it (issue 21 item 2)
    assert "make: *** [Makefile:23: parser.o] Error 1" not in summary
    assert "run_build(all): error" in summary or "run_build: error" in summary


async def test_large_system_prompt_shrinks_the_kept_tail(tmp_path: Path) -> None:
    """A third of the window taken by the system prompt: what stays must still fit."""
    events: list[ContextEvent] = []
    hook = MemoryCompactionHook(
        config(6000, compactor="extractive"), tmp_path, on_event=events.append
    )
    policy = demo_policy(60, parallel_every=4)
    model = ScriptedChatModel([policy] * 300, context_size=6000)
    agent = await make_agent(hook, model, make_demo_tools(seed=5), system_prompt="Rule. " * 600)
    sent: list[int] = []

    class Recorder(MiddlewareBase):
        async def on_model_call(
            self, agent: Any, input_kwargs: dict[str, Any], next_handler: Any
        ) -> Any:
            sent.append((await hook.agent_stats(agent))["last_prompt_tokens"])
            return await next_handler(**input_kwargs)

    agent._model_call_middlewares.append(Recorder())
    for turn in policy.user_turns():
        await agent.reply(UserMsg("user", turn))
    compactions = [e for e in events if e.kind == "compaction"]
    assert compactions
    over = [(e.tokens_before, e.tokens_after) for e in compactions if e.tokens_after > 4200]
    assert not over, f"compactions that ended over the 4200-token threshold: {over}"
    assert sent and max(sent) <= 6000, "the model must never receive more than the window"


async def test_kept_tail_leaves_room_for_a_large_system_prompt(tmp_path: Path) -> None:
    events: list[ContextEvent] = []
    hook = MemoryCompactionHook(
        config(6000, compactor="extractive"), tmp_path, on_event=events.append
    )
    model = ScriptedChatModel([text_step("ok")], context_size=6000)
    agent = await make_agent(hook, model, system_prompt="Rule. " * 1100)
    agent.state.context = seeded_history(30, result_bytes=100)
    await agent.reply(UserMsg("user", "next"))
    (event,) = [e for e in events if e.kind == "compaction"]
    assert event.tokens_after <= event.threshold_tokens, (event.tokens_before, event.tokens_after)


async def test_chinese_setting_gives_a_chinese_summary_and_guide(tmp_path: Path) -> None:
    hook = MemoryCompactionHook(config(200_000, compactor="extractive", language="zh"), tmp_path)
    agent = await make_agent(hook, ScriptedChatModel([text_step("好的")]))
    agent.state.context = seeded_history(3)
    reply = await agent.reply(UserMsg("user", "/compact"))
    assert (reply.get_text_content() or "").startswith("**Compact Complete!**")
    summary = str(agent.state.summary)
    for title in (
        "## 目标",
        "## 约束与偏好",
        "## 进展",
        "## 关键决策",
        "## 下一步",
        "## 关键上下文",
    ):
        assert title in summary
    assert "dialog/" in summary and "Never touch prod.yaml." in summary


async def test_the_compaction_event_says_why_each_compactor_call_was_made(tmp_path: Path) -> None:
    agent, events = await _compact_with_failing_compactor(tmp_path, RuntimeError("provider 500"))
    (event,) = [e for e in events if e.kind == "compaction"]
    first, *retries = event.compactor_calls
    assert first.startswith("stage 1: ") and retries
    assert all(why == "retry: RuntimeError: provider 500" for why in retries), retries


async def test_a_guide_of_many_day_files_stays_within_the_threshold(tmp_path: Path) -> None:
    """A session archived over many days: the summary message's guide lists up to seven day
    files, and the summary's room leaves space for all of them."""
    dialog = tmp_path / "dialog"
    dialog.mkdir()
    for day in range(1, 9):
        line = json.dumps({"session_id": "earlier", "role": "user", "content": "x"})
        (dialog / f"2026-11-{day:02d}.jsonl").write_text((line + "\n") * 1234)
    events: list[ContextEvent] = []
    hook = MemoryCompactionHook(
        config(6000, compactor="extractive"), tmp_path, on_event=events.append
    )
    policy = demo_policy(40, parallel_every=4)
    model = ScriptedChatModel([policy] * 200, context_size=6000)
    agent = await make_agent(hook, model, make_demo_tools(seed=5), system_prompt="Rule. " * 600)
    for turn in policy.user_turns():
        await agent.reply(UserMsg("user", turn))
    compactions = [e for e in events if e.kind == "compaction"]
    assert compactions and all(len(e.archive_files) == 7 for e in compactions)
    over = [(e.tokens_before, e.tokens_after) for e in compactions if e.tokens_after > 4200]
    assert not over, f"compactions that ended over the 4200-token threshold: {over}"


async def test_a_tool_already_named_read_file_is_replaced_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from agentscope.agent import Agent, InjectionConfig
    from agentscope.tool import FunctionTool, Toolkit

    async def read_file(file_path: str) -> str:
        """Another reader, without our notices' line_offset.

        Args:
            file_path (`str`): The file.
        """
        return "theirs"

    theirs = FunctionTool(read_file)
    agent = Agent(
        name="a",
        system_prompt="sys",
        model=ScriptedChatModel([text_step("ok")]),
        toolkit=Toolkit(tools=[theirs]),
        injection_config=InjectionConfig(inject_runtime_state=False),
    )
    hook = MemoryCompactionHook(config(200_000), tmp_path)
    with caplog.at_level(logging.WARNING, "copaw_context"):
        await attach(agent, hook)
    assert "replacing the toolkit's read_file" in caplog.text
    ours = await agent.toolkit.get_tool("read_file")
    assert ours is not None and ours is not theirs
    assert ours is (await hook.list_tools())[0]
    names = [t["function"]["name"] for t in await agent.toolkit.get_tool_schemas()]
    assert names.count("read_file") == 1


async def test_a_message_pinned_after_it_was_counted_is_kept(tmp_path: Path) -> None:
    hook = MemoryCompactionHook(config(200_000, compactor="extractive"), tmp_path)
    model = ScriptedChatModel([text_step(f"answer {i}") for i in range(3)], context_size=200_000)
    agent = await make_agent(hook, model)
    agent.state.context = seeded_history(6, result_bytes=400)
    await agent.reply(UserMsg("user", "question 0"))  # every message counted, none pinned
    before = len(agent.state.context)
    old = agent.state.context[2]
    pin_message(old)  # in place, after the engine counted it
    await agent.reply(UserMsg("user", "/compact"))
    assert old in agent.state.context, "the pin set in place was not seen"
    assert agent.state.summary and len(agent.state.context) < before  # the rest compacted
