"""Tests for the scripted model test double and the offline demo session."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import pytest
from agentscope.agent import Agent, ContextConfig, InjectionConfig
from agentscope.event import TextBlockDeltaEvent
from agentscope.formatter import OpenAIChatFormatter
from agentscope.message import (
    AssistantMsg,
    HintBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    UserMsg,
)
from agentscope.middleware import MiddlewareBase
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import FunctionTool, Toolkit, ToolResponse
from hypothesis import given, settings
from hypothesis import strategies as st

from copaw_context.cli.demo import (
    BIG_PAGE_BYTES,
    BIG_PAGE_URL,
    BUILD_ERROR_LINE,
    MAKE_ERROR_LINE,
    DemoTools,
    demo_policy,
    demo_user_turns,
    make_demo_tools,
)
from copaw_context.core.toolresults.truncation import count_lines, truncate_text_output
from copaw_context.testing import (
    ModelCall,
    ScriptedChatModel,
    ScriptExhaustedError,
    UnconsumedStepsError,
    openai_pairing_problems,
    text_step,
    tool_calls_step,
)

ALLOW = PermissionDecision(behavior=PermissionBehavior.ALLOW, message="test")
KB = 1024


def get_weather(city: str) -> str:
    """Get the weather of a city.

    Args:
        city (`str`): The city name.
    """
    return f"Sunny, 21C in {city}."


def make_agent(
    model: ScriptedChatModel, tools: list[FunctionTool] | None = None, **kw: Any
) -> Agent:
    return Agent(
        name="assistant",
        system_prompt="You are helpful.",
        model=model,
        toolkit=Toolkit(
            tools=tools if tools is not None else [FunctionTool(get_weather, permission=ALLOW)]
        ),
        injection_config=InjectionConfig(inject_runtime_state=False),
        **kw,
    )


def weather_script() -> list[Any]:
    return [
        tool_calls_step(("get_weather", {"city": "Paris"}), text="Let me check."),
        text_step("It is sunny in Paris."),
    ]


# --------------------------------------------------------------------------- ScriptedChatModel


async def test_tool_call_then_answer_is_recorded() -> None:
    model = ScriptedChatModel(weather_script())
    agent = make_agent(model)
    reply = await agent.reply(UserMsg("user", "Weather in Paris?"))

    assert reply.get_text_content() == "It is sunny in Paris."
    assert model.remaining == 0
    model.assert_complete()
    first, second = model.calls
    assert [m.role for m in first.messages] == ["system", "user"]
    assert first.tool_names == ["get_weather"] and first.tool_choice is None
    call_id = second.messages[-1].get_content_blocks("tool_call")[0].id
    tool_msgs = [m for m in second.formatted if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in tool_msgs] == [
        (call_id, "Sunny, 21C in Paris.")
    ]
    # Recorded messages are copies: the live reply message grew afterwards, the record did not.
    assert [b.type for b in second.messages[-1].content] == ["text", "tool_call", "tool_result"]
    assert [b.type for b in agent.state.context[-1].content] == [
        "text",
        "tool_call",
        "tool_result",
        "text",
    ]
    assert all(openai_pairing_problems(c.formatted, pending_ok=False) == [] for c in model.calls)


async def test_exhausted_script_propagates_from_agent_reply() -> None:
    model = ScriptedChatModel(weather_script())
    agent = make_agent(model)
    await agent.reply(UserMsg("user", "Weather in Paris?"))

    with pytest.raises(ScriptExhaustedError) as caught:
        await agent.reply(UserMsg("user", "And in Rome?"))
    message = str(caught.value)
    assert "called 3 time(s)" in message and "only 2 step(s)" in message
    assert "add_steps" in message and "['get_weather']" in message
    assert message.rstrip().endswith("user: And in Rome?")
    assert len(model.calls) == 3  # the failed call is recorded too

    model.add_steps(text_step("Rome is cloudy."))
    reply = await agent.reply(UserMsg("user", "Rome, please?"))
    assert reply.get_text_content() == "Rome is cloudy."
    model.assert_complete()


async def test_assert_complete_reports_unused_steps() -> None:
    model = ScriptedChatModel([text_step("one"), text_step("two"), RuntimeError("never")])
    await make_agent(model).reply(UserMsg("user", "hi"))
    with pytest.raises(UnconsumedStepsError, match=r"2 of 3 step\(s\) were never used"):
        model.assert_complete()
    with pytest.raises(UnconsumedStepsError, match=r"raise RuntimeError\(never\)"):
        model.assert_complete()


async def test_exception_step_propagates_unchanged() -> None:
    error = ConnectionError("provider down")
    model = ScriptedChatModel([error], stream=True)
    with pytest.raises(ConnectionError) as caught:
        await make_agent(model).reply(UserMsg("user", "hi"))
    assert caught.value is error
    assert model.remaining == 0 and len(model.calls) == 1


def test_bad_steps_are_rejected_with_clear_errors() -> None:
    with pytest.raises(TypeError, match="pass an exception instance"):
        ScriptedChatModel([ValueError])
    with pytest.raises(TypeError, match=r"script step 1: UserMsg|script step 1: Msg"):
        ScriptedChatModel([text_step("ok"), [UserMsg("user", "not a model block")]])
    with pytest.raises(TypeError, match="expected a list"):
        ScriptedChatModel(["just a string"])
    with pytest.raises(TypeError, match="arguments of 'f' must be a dict"):
        tool_calls_step(("f", "x=1"))  # type: ignore[arg-type]


async def test_callable_steps_get_the_call_and_may_be_async() -> None:
    seen: list[ModelCall] = []

    def sync_step(call: ModelCall) -> list[Any]:
        seen.append(call)
        return tool_calls_step(("get_weather", {"city": "Oslo"}))

    async def async_step(call: ModelCall) -> list[Any]:
        seen.append(call)
        await asyncio.sleep(0)
        return text_step(f"saw {len(call.formatted)} openai messages")

    model = ScriptedChatModel([sync_step, async_step])
    reply = await make_agent(model).reply(UserMsg("user", "Oslo?"))
    assert seen == model.calls
    assert reply.get_text_content() == "saw 4 openai messages"  # system, user, assistant, tool


async def test_callable_step_returning_garbage_fails_clearly() -> None:
    model = ScriptedChatModel([lambda call: "text instead of blocks"])
    with pytest.raises(TypeError, match=r"script step 0 \(callable .*lambda.*\): expected a list"):
        await make_agent(model).reply(UserMsg("user", "hi"))


@pytest.mark.parametrize("stream", [False, True])
async def test_streaming_matches_non_streaming(stream: bool) -> None:
    script = [
        [ThinkingBlock(thinking="The user wants weather."), *weather_script()[0]],
        text_step("It is sunny in Paris, with a light breeze from the west."),
    ]
    model = ScriptedChatModel(
        script, stream=stream, usage=lambda call: (100 + len(call.messages), 7)
    )
    agent = make_agent(model)
    events = [
        evt async for evt in agent.reply_stream(UserMsg("user", "Weather?"), yield_final_msg=True)
    ]
    reply = events[-1]
    assert isinstance(reply, Msg)
    assert reply.get_text_content() == "It is sunny in Paris, with a light breeze from the west."
    deltas = [e for e in events if isinstance(e, TextBlockDeltaEvent)]
    # Non-streaming: one delta per text block (2); streaming: three pieces each.
    assert len(deltas) == (6 if stream else 2)
    saved = agent.state.context[-1]
    assert [b.type for b in saved.content] == [
        "thinking",
        "text",
        "tool_call",
        "tool_result",
        "text",
    ]
    assert saved.content[0].thinking == "The user wants weather."
    assert json.loads(saved.content[2].input) == {"city": "Paris"}
    assert reply.usage is not None
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (102 + 103, 14)


async def test_default_usage_is_bytes_over_four() -> None:
    model = ScriptedChatModel([text_step("hello")])
    reply = await make_agent(model).reply(UserMsg("user", "héllo wörld " * 50))
    (call,) = model.calls
    payload = json.dumps([call.formatted, call.tools], ensure_ascii=False)
    assert reply.usage is not None
    assert reply.usage.input_tokens == len(payload.encode("utf-8")) // 4
    assert reply.usage.output_tokens == 10


def test_tool_call_ids_are_unique() -> None:
    blocks = [b for _ in range(50) for b in tool_calls_step(("a", {}), ("b", {"x": 1}))]
    ids = [b.id for b in blocks]
    assert len(set(ids)) == 100 and all(re.fullmatch(r"call_\d+", i) for i in ids)


# --------------------------------------------------------------------------- pairing check


def fmt(msgs: list[Msg]) -> list[dict[str, Any]]:
    return asyncio.run(OpenAIChatFormatter().format(msgs))


def call(cid: str, name: str = "f") -> ToolCallBlock:
    return ToolCallBlock(id=cid, name=name, input="{}")


def result(cid: str, name: str = "f") -> ToolResultBlock:
    return ToolResultBlock(id=cid, name=name, output="ok", state="success")


def test_pairing_valid_sequences_from_the_real_formatter() -> None:
    msgs = [
        UserMsg("user", "go"),
        AssistantMsg(
            "a",
            [
                TextBlock(text="t"),
                call("1"),
                call("2"),
                result("1"),
                result("2"),
                call("3"),
                result("3"),
            ],
        ),
        UserMsg("user", "more"),
        AssistantMsg("a", [call("4", "g"), result("4", "g"), TextBlock(text="done")]),
    ]
    formatted = fmt(msgs)
    assert [m["role"] for m in formatted] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "tool",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert openai_pairing_problems(formatted, pending_ok=False) == []
    assert openai_pairing_problems([]) == []


def test_pending_calls_only_allowed_in_the_last_assistant_message() -> None:
    formatted = fmt(
        [
            UserMsg("user", "go"),
            AssistantMsg("a", [call("1"), result("1"), call("2"), call("3"), result("3")]),
        ]
    )
    assert openai_pairing_problems(formatted) == []
    assert openai_pairing_problems(formatted, pending_ok=False) == [
        "message 3: tool call '2' (f) has no tool message in the run directly after it"
    ]
    earlier = fmt(
        [
            AssistantMsg("a", [call("1")]),
            UserMsg("user", "hm"),
            AssistantMsg("a", [TextBlock(text="x")]),
        ]
    )
    assert openai_pairing_problems(earlier) == [
        "message 0: tool call '1' (f) has no tool message in the run directly after it"
    ]


def test_pairing_problems_are_reported() -> None:
    assistant = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    }
    tool_a = {"role": "tool", "tool_call_id": "a", "name": "f", "content": "ok"}
    user = {"role": "user", "content": "hi"}
    assert openai_pairing_problems([user, tool_a]) == [
        "message 1: tool message for unknown call 'a' "
        "(no earlier assistant message has a tool_call with this id)"
    ]
    misplaced = (
        "message 2: tool message for call 'a' is not in the run of tool messages "
        "directly after its assistant message 0"
    )
    assert openai_pairing_problems([assistant, user, tool_a], pending_ok=False) == [
        "message 0: tool call 'a' (f) has no tool message in the run directly after it",
        misplaced,
    ]
    # The last assistant message may have pending calls, but an answer must still be in its run.
    assert openai_pairing_problems([assistant, user, tool_a]) == [misplaced]
    # Reusing an id once its call was answered is valid (some servers send call_0 every turn);
    # reusing it while the first call is still open is not.
    assert openai_pairing_problems([assistant, tool_a, assistant, tool_a]) == []
    assert openai_pairing_problems([assistant, assistant, tool_a], pending_ok=False) == [
        "message 0: tool call 'a' (f) has no tool message in the run directly after it",
        "message 1: duplicate tool call id 'a' (still unanswered from message 0)",
        "message 2: tool message for call 'a' is not in the run of tool messages "
        "directly after its assistant message 0",
    ]
    assert openai_pairing_problems([assistant, tool_a, tool_a]) == [
        "message 2: second tool message for call 'a'"
    ]
    assert openai_pairing_problems([assistant, {**tool_a, "name": "g"}]) == [
        "message 1: tool message named 'g' answers call 'a' of 'f'"
    ]
    assert openai_pairing_problems(
        [assistant, {"role": "tool", "content": "x"}], pending_ok=False
    ) == [
        "message 1: tool message without a tool_call_id",
        "message 0: tool call 'a' (f) has no tool message in the run directly after it",
    ]


def test_hint_between_call_and_result_is_caught_in_real_formatter_output() -> None:
    formatted = fmt(
        [
            UserMsg("user", "go"),
            AssistantMsg(
                "a", [call("1"), HintBlock(hint="note"), result("1"), TextBlock(text="x")]
            ),
        ]
    )
    problems = openai_pairing_problems(formatted)
    assert problems == [
        "message 1: tool call '1' (f) has no tool message in the run directly after it",
        "message 3: tool message for call '1' is not in the run of tool messages "
        "directly after its assistant message 1",
    ]


@settings(max_examples=60, deadline=None)
@given(
    turns=st.lists(st.tuples(st.integers(1, 3), st.booleans()), min_size=1, max_size=6),
    data=st.data(),
)
def test_pairing_invariant_on_generated_agent_contexts(
    turns: list[tuple[int, bool]], data: st.DataObject
) -> None:
    msgs: list[Msg] = []
    ids = iter(range(1000))
    for calls, with_text in turns:
        cids = [f"c{next(ids)}" for _ in range(calls)]
        blocks: list[Any] = [TextBlock(text="thinking aloud")] if with_text else []
        blocks += [call(c) for c in cids] + [result(c) for c in cids] + [TextBlock(text="answer")]
        msgs += [UserMsg("user", "q"), AssistantMsg("a", blocks)]
    formatted = fmt(msgs)
    assert openai_pairing_problems(formatted, pending_ok=False) == []
    tool_positions = [i for i, m in enumerate(formatted) if m["role"] == "tool"]
    drop = data.draw(st.sampled_from(tool_positions))
    broken = formatted[:drop] + formatted[drop + 1 :]
    assert any(
        "has no tool message" in p for p in openai_pairing_problems(broken, pending_ok=False)
    )


# --------------------------------------------------------------------------- demo tools


def test_demo_tool_outputs_have_the_promised_shapes() -> None:
    tools = DemoTools(seed=3)
    big = tools.fetch_page(BIG_PAGE_URL)
    assert len(big.encode()) == BIG_PAGE_BYTES == 300 * KB
    assert big.startswith("<!DOCTYPE html>") and big.endswith("</html>\n")
    for page in (tools.fetch_page(f"https://example.com/p{i}") for i in range(8)):
        assert 1 * KB <= len(page.encode()) <= 300 * KB
        assert "<table>" in page and "<script>" in page and page.count("\n") > 20
    for target in ("all", "parser", "test", "docs"):
        log = tools.run_build(target)
        assert 5 * KB <= len(log.encode()) <= 120 * KB
        last_lines = log.splitlines()[-6:]
        assert last_lines[-1] == MAKE_ERROR_LINE == "make: *** [Makefile:23: parser.o] Error 1"
        assert BUILD_ERROR_LINE in last_lines
    for name in ("部署指南", "运维手册", "x"):
        doc = tools.read_doc(name)
        assert 20 * KB <= len(doc.encode()) <= 80 * KB
        assert sum("\u4e00" <= ch <= "\u9fff" for ch in doc) > len(doc) * 0.6
    listing = tools.list_dir("src")
    assert len(listing) < KB and "vendor/" in listing
    logs = tools.search_logs("timeout")
    assert "\n" not in logs and 55 * KB <= len(logs.encode()) <= 65 * KB
    assert json.loads(logs)["query"] == "timeout"


def test_demo_tools_are_deterministic_per_seed() -> None:
    one, same, other = DemoTools(1), DemoTools(1), DemoTools(2)
    for method in ("fetch_page", "run_build", "read_doc", "list_dir", "search_logs"):
        assert getattr(one, method)("arg") == getattr(same, method)("arg")
        assert getattr(one, method)("arg") != getattr(other, method)("arg")


async def test_make_demo_tools_are_allowed_function_tools() -> None:
    tools = make_demo_tools(seed=0)
    assert sorted(t.name for t in tools) == [
        "fetch_page",
        "list_dir",
        "read_doc",
        "run_build",
        "search_logs",
    ]
    for tool in tools:
        assert (await tool.check_permissions()).behavior == PermissionBehavior.ALLOW
        (param,) = tool.input_schema["properties"].values()
        assert param["type"] == "string" and param["description"]
    chunk = await next(t for t in tools if t.name == "run_build").call(target="all")
    assert chunk.content[0].text == DemoTools(0).run_build("all")


# --------------------------------------------------------------------------- demo policy


class TruncateLargeResults(MiddlewareBase):
    """A tiny stand-in for the real middleware: offload results over 12 KB to a file."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.saved = 0

    async def on_acting(
        self, agent: Agent, input_kwargs: dict[str, Any], next_handler: Any
    ) -> AsyncGenerator[Any, None]:
        async for item in next_handler(**input_kwargs):
            if isinstance(item, ToolResponse) and input_kwargs["tool_call"].name != "read_file":
                text = "".join(b.text for b in item.content if isinstance(b, TextBlock))
                if len(text.encode()) > 12 * KB:
                    self.saved += 1
                    path = self.directory / f"result-{self.saved}.txt"
                    path.write_text(text, encoding="utf-8")
                    cut = truncate_text_output(text, max_bytes=12 * KB, file_path=str(path))
                    item = item.model_copy(update={"content": [TextBlock(text=cut)]})
            yield item


def read_file(file_path: str, start_line: int = 1, line_offset: int = 0) -> str:
    """Read a saved file from a line (and character offset in that line).

    Args:
        file_path (`str`): The file to read.
        start_line (`int`): The 1-based line to start at.
        line_offset (`int`): Characters of the start line to skip.
    """
    text = Path(file_path).read_text(encoding="utf-8")
    rest = "".join(text.splitlines(keepends=True)[start_line - 1 :])[line_offset:]
    return truncate_text_output(
        rest,
        start_line=start_line,
        start_offset=line_offset,
        total_lines=count_lines(text),
        max_bytes=6 * KB,
        file_path=file_path,
    )


async def test_demo_policy_drives_a_real_agent_with_valid_pairing(tmp_path: Path) -> None:
    policy = demo_policy(30, seed=0, parallel_every=4)
    model = ScriptedChatModel([policy] * 60, context_size=100_000)
    offload = TruncateLargeResults(tmp_path)
    tools = [*make_demo_tools(0), FunctionTool(read_file, is_read_only=True, permission=ALLOW)]
    agent = make_agent(
        model,
        tools,
        middlewares=[offload],
        context_config=ContextConfig(trigger_ratio=0.5, reserve_ratio=0.1),
    )

    replies = [await agent.reply(UserMsg("user", text)) for text in policy.user_turns()]

    assert policy.turn_count == len(replies) == 10 and policy.turn_lengths == (3,) * 10
    assert policy.done and policy.steps_taken == 30
    assert all(r.get_text_content().startswith("Finished: ") for r in replies)
    assert policy.parallel_steps >= 3 and policy.reads_issued >= 2 and offload.saved >= 5
    assert policy.summaries_written >= 1  # the built-in compression asked for a structured summary
    tool_calls = [
        b for c in model.calls for m in c.messages[-1:] for b in m.get_content_blocks("tool_call")
    ]
    assert tool_calls, "the agent's context should contain tool calls"
    for number, recorded in enumerate(model.calls):
        assert openai_pairing_problems(recorded.formatted, pending_ok=False) == [], (
            f"model call {number}"
        )
    reads = [
        json.loads(b.input)
        for c in model.calls
        for m in c.messages
        for b in m.get_content_blocks("tool_call")
        if b.name == "read_file"
    ]
    assert any(
        "line_offset" in args for args in reads
    )  # single-line JSON continues inside its line
    assert model.remaining == 60 - len(model.calls)
    assert "Never modify vendor/ files." in demo_user_turns()[0]


async def test_demo_policy_writes_a_six_section_summary_for_a_toolless_compactor() -> None:
    policy = demo_policy()
    model = ScriptedChatModel([policy])
    compactor = Agent(
        name="compactor",
        system_prompt="You are a context compaction assistant.",
        model=model,
        injection_config=InjectionConfig(inject_runtime_state=False),
    )
    transcript = "[user] Fix the build. Never modify vendor/ files.\n[tool] " + BUILD_ERROR_LINE
    reply = await compactor.reply(
        [
            UserMsg("user", transcript),
            UserMsg("user", "Create a structured summary from the conversation above."),
        ]
    )
    assert model.calls[0].tools == []
    text = reply.get_text_content() or ""
    headings = re.findall(r"^#{2,3} .+$", text, re.M)
    assert headings == [
        "## Goal",
        "## Constraints & Preferences",
        "## Progress",
        "### Done",
        "### In Progress",
        "### Blocked",
        "## Key Decisions",
        "## Next Steps",
        "## Critical Context",
    ]
    assert text.startswith("## Goal\n[user] Fix the build. Never modify vendor/ files.\n")
    assert "- Never modify vendor/ files\n" in text and f"- {BUILD_ERROR_LINE}\n" in text
    assert policy.steps_taken == 0 and policy.summaries_written == 1


def test_demo_policy_validates_arguments() -> None:
    with pytest.raises(ValueError, match="total_steps must be an int >= 2"):
        demo_policy(1)
    with pytest.raises(ValueError, match="parallel_every must be an int >= 1"):
        demo_policy(10, parallel_every=0)
    long_run = demo_policy(200)
    assert sum(long_run.turn_lengths) == 200 and max(long_run.turn_lengths) <= 40
    assert len(long_run.user_turns()) == long_run.turn_count
