"""Blocks another middleware or the caller replaces in place are seen at the next step (#23).

The ledger used to fingerprint a message by (id, number of blocks): a block replaced by
another one in a message that kept its number of blocks was never counted again, and a tool
result replaced by a bigger one was never cut. Now the engine compares the blocks' objects:
the next step counts what the context holds and cuts the bigger result like any old one.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from agentscope.agent import Agent, InjectionConfig
from agentscope.message import TextBlock, ToolCallBlock, ToolResultBlock, UserMsg
from agentscope.middleware import MiddlewareBase
from agentscope.tool import Toolkit

from copaw_context import MemoryCompactionHook
from copaw_context.agentscope2.session import AgentScope2Session
from copaw_context.core.config.running import RunningConfig, parse_running_config
from copaw_context.core.context.ledger import Ledger
from copaw_context.core.toolresults.truncation import parse_truncation_notice
from copaw_context.testing import ModelCall, ScriptedChatModel, Step, text_step
from tests.helpers import allow, lines_text, tool_result_texts, tool_results

BIGGER = lines_text(300, seed="rewritten")  # about 18 KB: over the old limit, under the recent


def config() -> RunningConfig:
    # pruning_recent_n=1: results other than the newest are cut to 3000 bytes once seen.
    return parse_running_config(
        {
            "running": {
                "max_input_length": 200_000,
                "memory": {"summarise_on_compact": False},
                "light_context_config": {
                    "token_counter": "o200k_base",
                    # stage 2 re-cuts each result once old and seen (no batches)
                    "tool_result_pruning_config": {"pruning_recent_n": 1, "pruning_batch_ratio": 0},
                },
            }
        }
    )


def status(target: str) -> str:
    """The status of a build target.

    Args:
        target (`str`): The target.
    """
    return f"{target}: ok"


def replace_result(agent: Agent, call_id: str, text: str) -> None:
    """Replace the result block of ``call_id`` by another block (same number of blocks)."""
    for msg in agent.state.context:
        for index, block in enumerate(msg.content):
            if isinstance(block, ToolResultBlock) and block.id == call_id:
                msg.content[index] = ToolResultBlock(
                    id=block.id, name=block.name, output=[TextBlock(text=text)], state=block.state
                )
                return
    raise AssertionError(f"no result {call_id}")


class Rewriter(MiddlewareBase):
    """Another middleware: before the engine's step ``at``, replaces the first result."""

    def __init__(self, at: int) -> None:
        self.at = at
        self.steps = 0

    async def on_compress_context(
        self,
        agent: Any,
        input_kwargs: dict[str, Any],
        next_handler: Callable[..., Awaitable[None]],
    ) -> None:
        self.steps += 1
        if self.steps == self.at:
            replace_result(agent, "c1", BIGGER)
        await next_handler(**input_kwargs)

    async def on_reasoning(
        self,
        agent: Any,
        input_kwargs: dict[str, Any],
        next_handler: Callable[..., AsyncGenerator[Any, None]],
    ) -> AsyncGenerator[Any, None]:
        async for item in next_handler(**input_kwargs):
            yield item


async def counts(hook: MemoryCompactionHook, agent: Agent) -> tuple[tuple[int, int], ...]:
    """The engine's count of the context now, and a count from scratch."""
    session = await hook.session(agent)
    ctx = hook.engine.context
    meter = await ctx.meter(session)
    fresh = Ledger()
    fresh.sync(session, meter, ctx.pruning.is_exempt)
    return ctx.ledger(session).total(), fresh.total()


def first_result(call: ModelCall) -> str:
    (block,) = [b for b in tool_results(call.messages) if b.id == "c1"]
    return "\n".join(tool_result_texts(block))


def call(call_id: str, target: str) -> list[Any]:
    return [ToolCallBlock(id=call_id, name="status", input=json.dumps({"target": target}))]


class Checks:
    """A model step recording what the engine counted and what the model got."""

    def __init__(self, hook: MemoryCompactionHook) -> None:
        self.hook = hook
        self.agent: Agent | None = None
        self.seen: list[tuple[tuple[tuple[int, int], ...], str]] = []

    async def __call__(self, model_call: ModelCall) -> list[Any]:
        assert self.agent is not None
        self.seen.append((await counts(self.hook, self.agent), first_result(model_call)))
        return text_step("done")


def agent_with(hook: MemoryCompactionHook, model: ScriptedChatModel, *others: Any) -> Agent:
    return Agent(
        name="assistant",
        system_prompt="You are a careful assistant.",
        model=model,
        toolkit=Toolkit(tools=[allow(status)]),
        middlewares=[*others, hook],
        injection_config=InjectionConfig(inject_runtime_state=False),
    )


def assert_counted_and_cut(seen: tuple[tuple[tuple[int, int], ...], str]) -> None:
    (engine_count, fresh_count), text = seen
    assert engine_count == fresh_count, "the replaced block is counted as it is now"
    found = parse_truncation_notice(text)
    assert found is not None, "the bigger result is cut like any old result"
    assert found[1].excerpt_bytes <= 3000 and found[1].file_path is not None
    assert Path(found[1].file_path).read_text(encoding="utf-8") == BIGGER


async def test_a_result_another_middleware_replaces_is_counted_and_cut(tmp_path: Path) -> None:
    hook = MemoryCompactionHook(config(), tmp_path)
    checks = Checks(hook)
    steps: list[Step] = [call("c1", "a"), text_step("a"), call("c2", "b"), call("c3", "c"), checks]
    model = ScriptedChatModel(steps, context_size=200_000)
    # Before the engine's 5th step (the last of the second reply): c1's message, the first
    # reply's, keeps its number of blocks; stage 2 has settled c1 (seen, small) a step before.
    checks.agent = agent = agent_with(hook, model, Rewriter(at=5))
    await agent.reply(UserMsg("user", "check a"))
    await agent.reply(UserMsg("user", "check b and c"))
    (seen,) = checks.seen
    assert_counted_and_cut(seen)


async def test_a_result_the_caller_replaces_between_replies_is_seen(tmp_path: Path) -> None:
    hook = MemoryCompactionHook(config(), tmp_path)
    checks = Checks(hook)
    steps: list[Step] = [call("c1", "a"), call("c2", "b"), text_step("ok"), call("c3", "c"), checks]
    model = ScriptedChatModel(steps, context_size=200_000)
    checks.agent = agent = agent_with(hook, model)  # our middleware alone
    await agent.reply(UserMsg("user", "check a and b"))
    replace_result(agent, "c1", BIGGER)  # e.g. the host's own code, between two replies
    await agent.reply(UserMsg("user", "check c"))
    (seen,) = checks.seen
    assert_counted_and_cut(seen)


@pytest.mark.parametrize("alone", [True, False])
async def test_a_step_compares_every_message_only_when_another_may_edit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, alone: bool
) -> None:
    """With our middleware alone, only the first step of a reply looks at every message (the
    caller may have edited the context in between); with another middleware, every step."""
    looked: list[bool] = []
    original = AgentScope2Session.others_may_edit

    def spy(session: AgentScope2Session) -> bool:
        looked.append(original(session))
        return looked[-1]

    monkeypatch.setattr(AgentScope2Session, "others_may_edit", spy)
    hook = MemoryCompactionHook(config(), tmp_path)
    steps: list[Step] = [call("c1", "a"), call("c2", "b"), text_step("fine"), text_step("ok")]
    others = () if alone else (Rewriter(at=0),)
    agent = agent_with(hook, ScriptedChatModel(steps, context_size=200_000), *others)
    await agent.reply(UserMsg("user", "check a and b"))
    await agent.reply(UserMsg("user", "and again"))  # a new reply: its first step looks again
    assert looked[:4] == ([True, False, False, True] if alone else [True] * 4)
