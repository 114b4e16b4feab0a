"""Host-made histories for either major: the shapes peers' formatter and history-processor
tests build by hand (AgentScope's formatter tests, LangChain's context editing and
summarization, pydantic-ai's history processors, ReMe's user-role results), seeded straight
into the agent's own context as a host's memory or saved session would hold them."""

from __future__ import annotations

import json
from typing import Any

from copaw_context import installed_agentscope_major

__all__ = [
    "AS2",
    "SHAPES",
    "abandoned_calls",
    "assistant",
    "call",
    "history",
    "result",
    "results",
    "seed",
    "text",
    "thinking",
    "user",
]

AS2 = installed_agentscope_major() >= 2
PAD = "context " * 60

SHAPES = [
    "interleaved",  # [a, b] -> result b -> [c] -> results a, c
    "thinking_between",
    "result_far",  # a call answered three turns later
    "result_first",  # the result before its call
    "same_id_one_message",  # two open calls with one id
    "result_twice",
    "dangling_last",  # the run was killed during the tool call; the session was saved
    "orphan_first",  # a result with no call
    "user_role_results",  # 1.x ReMe layout (2.x: results in assistant messages)
]


def call(i: str, name: str = "grep") -> Any:
    if AS2:
        from agentscope.message import ToolCallBlock

        return ToolCallBlock(id=i, name=name, input=json.dumps({"q": i}))
    from agentscope.message import ToolUseBlock

    return ToolUseBlock(type="tool_use", id=i, name=name, input={"q": i})


def result(i: str, size: int = 60, name: str = "grep") -> Any:
    from agentscope.message import TextBlock, ToolResultBlock

    body = f"{i}: hit\n" * size
    if AS2:
        return ToolResultBlock(id=i, name=name, output=[TextBlock(text=body)], state="success")
    return ToolResultBlock(
        type="tool_result", id=i, name=name, output=[TextBlock(type="text", text=body)]
    )


def text(t: str) -> Any:
    from agentscope.message import TextBlock

    return TextBlock(text=t) if AS2 else TextBlock(type="text", text=t)


def thinking(t: str) -> Any:
    from agentscope.message import ThinkingBlock

    return ThinkingBlock(thinking=t) if AS2 else ThinkingBlock(type="thinking", thinking=t)


def user(t: str) -> Any:
    if AS2:
        from agentscope.message import UserMsg

        return UserMsg("user", t)
    from agentscope.message import Msg

    return Msg("user", t, "user")


def assistant(blocks: list[Any]) -> Any:
    if AS2:
        from agentscope.message import AssistantMsg

        return AssistantMsg("assistant", blocks)
    from agentscope.message import Msg

    return Msg("assistant", blocks, "assistant")


def results(blocks: list[Any], role: str = "system") -> Any:
    """Results as the host holds them: 2.x in an assistant message, 1.x in a system message
    (ReActAgent) or a user message (ReMe's layout, ``role="user"``)."""
    if AS2:
        return assistant(blocks)
    from agentscope.message import Msg

    return Msg(role, blocks, role)


def _body(shape: str, t: int, turns: int) -> list[Any]:
    a, b, c = (f"t{t}_{k}" for k in "abc")
    if shape == "interleaved" or (shape == "user_role_results" and AS2 and t % 2):
        return [
            assistant([call(a), call(b)]),
            results([result(b)]),
            assistant([call(c)]),
            results([result(a), result(c)]),
        ]
    if shape == "thinking_between":
        return [
            assistant([thinking("plan " * 40), call(a), thinking("more " * 40), call(b)]),
            results([result(a), result(b)]),
        ]
    if shape == "result_far" and t == 1:
        return [assistant([call("far")])]
    if shape == "result_far" and t == 4:
        return [results([result("far")]), assistant([call(a)]), results([result(a)])]
    if shape == "result_first" and t == 2:
        return [results([result(a)]), assistant([call(a)])]
    if shape == "same_id_one_message" and t == 2:
        return [
            assistant([call("dup"), call("dup")]),
            results([result("dup"), result("dup")]),
        ]
    if shape == "result_twice" and t == 2:
        return [assistant([call(a)]), results([result(a)]), results([result(a)])]
    if shape == "dangling_last" and t == turns - 1:
        return [assistant([text("let me look"), call(a)])]
    if shape == "orphan_first" and t == 0:
        return [results([result("ghost")])]
    if shape == "user_role_results" and t % 2:
        return [
            assistant([call(a), call(b)]),
            results([result(b), result(a)], role="user"),
        ]
    return [assistant([call(a)]), results([result(a)])]


def history(shape: str, turns: int = 8) -> list[Any]:
    """``turns`` finished turns holding ``shape`` (the last one ends on its call when the
    shape is ``dangling_last``)."""
    out: list[Any] = []
    for t in range(turns):
        out += [user(f"request {t} {PAD}"), *_body(shape, t, turns)]
        if not (shape == "dangling_last" and t == turns - 1):
            out.append(assistant([text(f"answer {t} {PAD}")]))
    return out


def abandoned_calls(count: int, pad: int) -> list[Any]:
    """``count`` requests each answered only by a call with no result, then a long request
    and its answer (``pad`` words)."""
    out: list[Any] = []
    for i in range(count):
        out += [user(f"request {i}"), assistant([call(f"lost{i}")])]
    return [*out, user("pad " * pad), assistant([text("ok " * 20)])]


async def seed(agent: Any, messages: list[Any]) -> None:
    """Put ``messages`` in the agent's context as its host's memory holds them."""
    if AS2:
        agent.state.context = messages
    else:
        await agent.memory.add(messages)
