"""Blocks another hook or the caller replaces in a 1.x memory are seen at the next step (#23).

The ledger used to fingerprint a message by (id, number of blocks): a block replaced by
another one in a message that kept its number of blocks was never counted again, and a tool
result replaced by a bigger one was never cut. Now the engine compares the blocks' objects:
the next step counts what the memory holds and cuts the bigger result like any old one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentscope.agent import ReActAgent
from agentscope.message import Msg

from copaw_context.agentscope1 import MemoryCompactionHook
from copaw_context.core.context.ledger import Ledger
from copaw_context.core.toolresults.truncation import parse_truncation_notice
from copaw_context.testing import ModelCall, Step, text_step
from tests.agentscope1.helpers import build_agent, settings
from tests.reliability.drivers import formatted_text

BIGGER = "".join(f"rewritten {i:06d} {'x' * 47}\n" for i in range(300))  # about 18 KB: over
# the old limit (3000 bytes), under the recent one


def status(target: str) -> str:
    """The status of a build target.

    Args:
        target (`str`): The target.
    """
    return f"{target}: ok"


def call(call_id: str, target: str) -> list[Any]:
    return [{"type": "tool_use", "id": call_id, "name": "status", "input": {"target": target}}]


def replace_result(agent: ReActAgent, call_id: str, text: str) -> None:
    """Replace the result block of ``call_id`` by another block (same number of blocks)."""
    for msg, _marks in agent.memory.content:
        if not isinstance(msg.content, list):
            continue
        for index, block in enumerate(msg.content):
            if block.get("type") == "tool_result" and block.get("id") == call_id:
                msg.content[index] = {
                    "type": "tool_result",
                    "id": call_id,
                    "name": block.get("name"),
                    "output": [{"type": "text", "text": text}],
                }
                return
    raise AssertionError(f"no result {call_id}")


def first_result(call: ModelCall) -> str:
    (message,) = [m for m in call.formatted if m.get("tool_call_id") == "c1"]
    return formatted_text(message)


class Checks:
    """A model step recording what the engine counted and what the model got."""

    def __init__(self) -> None:
        self.hook: MemoryCompactionHook | None = None
        self.agent: ReActAgent | None = None
        self.seen: list[tuple[tuple[tuple[int, int], ...], str]] = []

    async def __call__(self, model_call: ModelCall) -> list[Any]:
        assert self.hook is not None and self.agent is not None
        session = await self.hook.session(self.agent)
        ctx = self.hook.engine.context
        fresh = Ledger()
        fresh.sync(session, await ctx.meter(session), ctx.pruning.is_exempt)
        counts = (ctx.ledger(session).total(), fresh.total())
        self.seen.append((counts, first_result(model_call)))
        return text_step("done")


def assert_counted_and_cut(seen: tuple[tuple[tuple[int, int], ...], str]) -> None:
    (engine_count, fresh_count), text = seen
    assert engine_count == fresh_count, "the replaced block is counted as it is now"
    found = parse_truncation_notice(text)
    assert found is not None, "the bigger result is cut like any old result"
    assert found[1].excerpt_bytes <= 3000 and found[1].file_path is not None
    assert Path(found[1].file_path).read_text(encoding="utf-8") == BIGGER


async def agent_for(tmp_path: Path, steps: list[Step]) -> tuple[ReActAgent, Checks]:
    checks = Checks()
    # stage 2 re-cuts each result once old and seen (no batches)
    pruning = {"pruning_recent_n": 1, "pruning_batch_ratio": 0}
    config = settings(tool_result_pruning_config=pruning)
    agent, hook, _model = await build_agent(tmp_path, [*steps, checks], [status], config=config)
    checks.hook, checks.agent = hook, agent
    return agent, checks


async def test_a_result_another_hook_replaces_is_counted_and_cut(tmp_path: Path) -> None:
    agent, checks = await agent_for(
        tmp_path, [call("c1", "a"), text_step("a"), call("c2", "b"), call("c3", "c")]
    )
    steps = 0

    def rewrite(agent: ReActAgent, kwargs: dict[str, Any]) -> None:
        """Another pre_reasoning hook (after ours): at the 4th step, c1 (settled by stage 2
        a step before, its message keeping its number of blocks) becomes bigger."""
        nonlocal steps
        steps += 1
        if steps == 4:
            replace_result(agent, "c1", BIGGER)

    agent.register_instance_hook("pre_reasoning", "rewriter", rewrite)
    await agent(Msg("user", "check a", "user"))
    await agent(Msg("user", "check b and c", "user"))
    (seen,) = checks.seen  # the step after the rewrite
    assert_counted_and_cut(seen)


async def test_a_result_the_caller_replaces_between_replies_is_seen(tmp_path: Path) -> None:
    agent, checks = await agent_for(
        tmp_path, [call("c1", "a"), call("c2", "b"), text_step("ok"), call("c3", "c")]
    )
    await agent(Msg("user", "check a and b", "user"))
    replace_result(agent, "c1", BIGGER)
    await agent(Msg("user", "check c", "user"))
    (seen,) = checks.seen
    assert_counted_and_cut(seen)


async def test_a_message_pinned_after_it_was_counted_is_kept(tmp_path: Path) -> None:
    from copaw_context.agentscope1 import pin_message

    answers = [text_step(f"answer {i}") for i in range(5)] + [text_step("a summary")] * 4
    agent, _hook, _model = await build_agent(tmp_path, answers, config=settings())
    await agent(Msg("user", "Reference: the deploy key is K-7731.", "user"))
    for i in range(4):
        await agent(Msg("user", f"question {i}: " + "details " * 600, "user"))
    first = agent.memory.content[0][0]  # counted at every step, not pinned
    before = len(agent.memory.content)
    pin_message(first)  # in place, after the engine counted it
    await agent(Msg("user", "/compact", "user"))
    kept = [m.id for m, marks in agent.memory.content if "compressed" not in marks]
    assert first.id in kept, "the pin set in place was not seen"
    assert len(kept) < before  # the rest was compacted
