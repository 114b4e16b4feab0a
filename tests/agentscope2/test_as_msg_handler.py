"""AsMsgHandler invariants on real AgentScope 2.x messages (hypothesis)."""

from __future__ import annotations

import asyncio
import json

from agentscope.formatter import OpenAIChatFormatter
from agentscope.message import AssistantMsg, Msg, TextBlock, ToolCallBlock, ToolResultBlock, UserMsg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from copaw_context import pin_message
from copaw_context.agentscope2 import AsMsgHandler
from copaw_context.core.tokens import EstimateTokenCounter
from copaw_context.testing import openai_pairing_problems

HANDLER = AsMsgHandler(EstimateTokenCounter(4))
FORMATTER = OpenAIChatFormatter()


@st.composite
def contexts(draw: st.DrawFn) -> list[Msg]:
    """Realistic 2.x contexts: user turns, one reply Msg per turn with tool groups inside."""
    messages: list[Msg] = []
    call_no = 0
    reuse_ids = draw(st.booleans())  # some servers restart at call_0 every turn
    for turn in range(draw(st.integers(1, 6))):
        if reuse_ids:
            call_no = 0
        user = UserMsg("user", f"request {turn} " + "u" * draw(st.integers(0, 400)))
        if draw(st.booleans()) and draw(st.integers(0, 5)) == 0:
            pin_message(user)
        messages.append(user)
        blocks: list[object] = []
        last_turn = turn == 5
        for _group in range(draw(st.integers(0, 4))):
            if draw(st.booleans()):
                blocks.append(TextBlock(text="thinking aloud " * draw(st.integers(0, 30))))
            width = draw(st.integers(1, 3))  # parallel calls in one step
            ids = [f"c{call_no + i}" for i in range(width)]
            call_no += width
            blocks += [ToolCallBlock(id=i, name="tool", input=json.dumps({"i": i})) for i in ids]
            order = draw(st.permutations(ids))
            for i in order:
                size = draw(st.integers(0, 3000))
                blocks.append(
                    ToolResultBlock(
                        id=i, name="tool", output=[TextBlock(text="r" * size)], state="success"
                    )
                )
        if draw(st.booleans()) or last_turn:
            blocks.append(TextBlock(text="answer " * draw(st.integers(1, 40))))
        if blocks:
            messages.append(AssistantMsg("assistant", blocks))  # type: ignore[arg-type]
    if draw(st.booleans()):
        pending = f"c{call_no}"  # an unfinished call at the very end
        messages.append(
            AssistantMsg("assistant", [ToolCallBlock(id=pending, name="tool", input="{}")])
        )
    return messages


def keys(messages: list[Msg]) -> list[tuple[str, int]]:
    """Block identities (ids may repeat when a server reuses tool-call ids)."""
    return [(b.type, id(b)) for m in messages for b in m.content]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contexts(), st.integers(0, 3000), st.integers(0, 6000), st.booleans())
def test_context_check_is_pair_safe_and_loses_nothing(
    context: list[Msg], reserve: int, threshold: int, force: bool
) -> None:
    before = keys(context)
    check = HANDLER.context_check(
        context, threshold_tokens=threshold, reserve_tokens=reserve, fixed_tokens=50, force=force
    )
    compacted, kept = keys(check.to_compact), keys(check.to_keep)
    assert sorted(compacted + kept) == sorted(before), "blocks lost or duplicated"
    assert set(compacted).isdisjoint(kept)
    # Order is preserved on both sides.
    position = {k: i for i, k in enumerate(before)}
    assert [position[k] for k in kept] == sorted(position[k] for k in kept)
    assert [position[k] for k in compacted] == sorted(position[k] for k in compacted)
    # What the model receives after compaction is valid for an OpenAI-style API.
    formatted = asyncio.run(FORMATTER.format(check.to_keep))
    assert openai_pairing_problems(formatted) == []
    # The latest request and pinned messages stay; every kept message is non-empty.
    # /compact (force) may take a finished turn whole: its request with its answer, or neither.
    users = [m for m in context if m.role == "user"]
    if users and not any(m is users[-1] for m in check.to_keep):
        assert force, "the latest request was compacted automatically"
        after = context[[id(m) for m in context].index(id(users[-1])) + 1 :]
        assert after and after[-1].role == "assistant", "an open request was compacted"
        assert after[-1].content[-1].type == "text", "the turn is open (it ends on a tool block)"
        assert not any(m is k for m in after for k in check.to_keep), "its answer was kept"
    assert all(
        any(m is k for k in check.to_keep) for m in context if m.metadata.get("copaw_context")
    )
    assert all(m.content for m in check.to_keep + check.to_compact)
    # A split message keeps its id on the kept side (the running reply keeps appending).
    kept_ids = {m.id for m in check.to_keep}
    for msg in check.to_compact:
        if msg.id in kept_ids:
            tail = next(m for m in check.to_keep if m.id == msg.id)
            assert keys([msg]) + keys([tail]) == keys([next(c for c in context if c.id == msg.id)])


def test_split_reply_yields_two_valid_messages() -> None:
    reply = AssistantMsg(
        "assistant",
        [
            TextBlock(text="step one"),
            ToolCallBlock(id="a", name="tool", input="{}"),
            ToolResultBlock(
                id="a", name="tool", output=[TextBlock(text="x" * 4000)], state="success"
            ),
            TextBlock(text="step two"),
            ToolCallBlock(id="b", name="tool", input="{}"),
            ToolResultBlock(
                id="b", name="tool", output=[TextBlock(text="y" * 40)], state="success"
            ),
        ],
    )
    context = [UserMsg("user", "go"), reply]
    check = HANDLER.context_check(context, threshold_tokens=10, reserve_tokens=200, fixed_tokens=0)
    assert [b.type for b in check.to_compact[-1].content] == ["text", "tool_call", "tool_result"]
    assert [b.type for b in check.to_keep[-1].content] == ["text", "tool_call", "tool_result"]
    assert check.to_keep[-1].id == reply.id and check.to_compact[-1].id == reply.id
    assert check.to_keep[0].get_text_content() == "go"  # the latest request stays


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contexts(), st.integers(0, 3000), st.integers(0, 6000), st.integers(0, 9))
def test_a_handler_kept_between_calls_decides_as_a_fresh_one(
    context: list[Msg], reserve: int, threshold: int, cut: int
) -> None:
    """One handler over a growing context, then with blocks replaced in place, splits
    exactly as a handler made for each call (its ledger counts only what changed)."""
    kept = AsMsgHandler(EstimateTokenCounter(4))
    options = {"threshold_tokens": threshold, "reserve_tokens": reserve}

    def same_decisions(step: list[Msg]) -> None:
        fresh = AsMsgHandler(EstimateTokenCounter(4)).context_check(step, **options)
        again = kept.context_check(step, **options)
        assert again.plan == fresh.plan
        for ours, theirs in ((again.to_keep, fresh.to_keep), (again.to_compact, fresh.to_compact)):
            assert [(m.id, len(m.content)) for m in ours] == [
                (m.id, len(m.content)) for m in theirs
            ]

    same_decisions(context[: max(1, len(context) * cut // 10)])
    same_decisions(context)
    for msg in context:  # a block replaced in place: same message, same number of blocks
        for i, block in enumerate(msg.content):
            if isinstance(block, TextBlock):
                msg.content[i] = TextBlock(text=block.text + " edited" * 200)
                break
    same_decisions(context)
