"""AsMsgHandler invariants on real AgentScope 2.x messages (hypothesis)."""

from __future__ import annotations

import asyncio
import json

from agentscope.formatter import OpenAIChatFormatter
from agentscope.message import AssistantMsg, Msg, TextBlock, ToolCallBlock, ToolResultBlock, UserMsg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from copaw_context import pin_message
from copaw_context.agentscope2 import AsMsgHandler, ContextCheck
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


def test_a_pin_set_in_place_is_seen_by_a_kept_handler() -> None:
    """``pin_message`` on a message the handler already counted changes neither its blocks
    nor its fingerprint: the kept handler must still keep it, as a fresh one does."""
    reply = AssistantMsg("assistant", [TextBlock(text="r" * 4000)])
    context = [UserMsg("user", "q" * 400), reply, UserMsg("user", "go")]
    kept = AsMsgHandler(EstimateTokenCounter(4))
    options = {"threshold_tokens": 10, "reserve_tokens": 50}
    assert any(m is reply for m in kept.context_check(context, **options).to_compact)
    pin_message(reply)
    again = kept.context_check(context, **options)
    fresh = AsMsgHandler(EstimateTokenCounter(4)).context_check(context, **options)
    assert again.plan == fresh.plan
    assert any(m is reply for m in again.to_keep), "a pinned message was compacted"


def test_a_str_content_is_one_text_block() -> None:
    """A ``Msg`` whose content was set to a ``str`` (not validated on assignment) is one text
    block: counted as its text, never cut into characters, and it does not hide the blocks
    replaced in place in the other messages from a kept handler."""
    note = AssistantMsg("assistant", [TextBlock(text="n")])
    note.content = "s" * 800  # type: ignore[assignment]
    context = [UserMsg("user", "q" * 40), note, UserMsg("user", "go")]
    kept = AsMsgHandler(EstimateTokenCounter(4))
    options = {"threshold_tokens": 10, "reserve_tokens": 30}
    check = kept.context_check(context, **options)
    assert check.plan.total_tokens < 400  # 800 characters / 4, not 800 "other" blocks
    assert [m for m in check.to_compact + check.to_keep if m is note] == [note]
    context[0].content[0] = TextBlock(text="q" * 4000)  # replaced in place
    fresh = AsMsgHandler(EstimateTokenCounter(4)).context_check(context, **options)
    assert kept.context_check(context, **options).plan == fresh.plan


@st.composite
def odd_contexts(draw: st.DrawFn) -> list[Msg]:
    """Contexts with what real ones rarely hold: empty messages, pinned replies in the
    middle, a reply reusing an earlier message's id, a content set to a ``str``."""
    messages: list[Msg] = []
    calls = 0
    for turn in range(draw(st.integers(1, 4))):
        request = UserMsg("user", f"q{turn} " + "u" * draw(st.integers(0, 300)))
        messages.append(pin_message(request) if draw(st.integers(0, 4)) == 0 else request)
        for _ in range(draw(st.integers(0, 2))):
            kind = draw(st.sampled_from(["reply", "empty", "pinned", "same_id", "str"]))
            blocks: list[object] = []
            for _group in range(draw(st.integers(0, 3)) if kind in ("reply", "pinned") else 0):
                ids = [f"c{calls + i}" for i in range(draw(st.integers(1, 3)))]
                calls += len(ids)
                blocks += [ToolCallBlock(id=i, name="tool", input="{}") for i in ids]
                blocks += [
                    ToolResultBlock(
                        id=i, name="tool", output=[TextBlock(text="r" * draw(st.integers(0, 2500)))]
                    )
                    for i in draw(st.permutations(ids))
                ]
            if kind != "empty":
                blocks.append(TextBlock(text="a" * draw(st.integers(0, 400))))
            reply = AssistantMsg("assistant", blocks)  # type: ignore[arg-type]
            if kind == "pinned":
                pin_message(reply)
            elif kind == "same_id":
                reply.id = draw(st.sampled_from(messages)).id
            elif kind == "str":
                reply.content = "s" * draw(st.integers(0, 900))  # type: ignore[assignment]
            messages.append(reply)
    return messages


def _blocks(msg: Msg) -> list[int]:
    if isinstance(msg.content, list):
        return [id(b) for b in msg.content]
    # a str content is one block, never parted: keyed by its message (equal short strs are
    # one interned object, so two messages holding "s" would share an id)
    return [-id(msg)]


def _assert_partition(context: list[Msg], check: ContextCheck[Msg]) -> None:
    """Every message once, whole on one side or parted (same id, its blocks split in order,
    each side in the input's order), and every call on its result's side."""
    sides: dict[int, str] = {}
    for side, messages in (("compact", check.to_compact), ("keep", check.to_keep)):
        at = 0  # the next piece of this side: of this message, or of a later one
        for msg in context:
            piece = messages[at] if at < len(messages) else None
            if piece is not msg and (  # a part of it: its id, some of its blocks
                piece is None
                or piece.id != msg.id
                or not set() < set(_blocks(piece)) < set(_blocks(msg))
            ):
                continue
            at += 1
            for block in _blocks(piece):
                assert block not in sides, "a block on both sides"
                sides[block] = side
        assert at == len(messages), "a message out of order or not from the input"
    for msg in context:
        owned = [sides[b] for b in _blocks(msg)]
        assert owned == sorted(owned), "a parted message's blocks out of order"  # compact < keep
    open_calls: list[ToolCallBlock] = []
    for msg in context:
        for block in msg.content if isinstance(msg.content, list) else ():
            if isinstance(block, ToolCallBlock):
                open_calls.append(block)
            elif isinstance(block, ToolResultBlock):
                found = next(c for c in open_calls if c.id == block.id)
                open_calls.remove(found)
                assert sides[id(found)] == sides[id(block)], "a call apart from its result"


def _shape(context: list[Msg], messages: list[Msg]) -> list[tuple[object, int]]:
    where = {id(m): i for i, m in enumerate(context)}
    return [(where.get(id(m), m.id), len(_blocks(m))) for m in messages]


_EDITS = st.lists(
    st.tuples(st.sampled_from(["shrink", "block", "same_id", "pin", "str", "grow"]), st.integers()),
    max_size=4,
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    odd_contexts(),
    _EDITS,
    st.sampled_from([0, 50, 3000, 10**9]),
    st.sampled_from([0, 1000, 10**9]),
    st.booleans(),
)
def test_odd_contexts_edited_between_calls(
    context: list[Msg], edits: list[tuple[str, int]], reserve: int, threshold: int, force: bool
) -> None:
    """Over odd contexts edited in place between calls, a kept handler loses, duplicates and
    reorders nothing, keeps every call with its result, and decides as a fresh one."""
    kept = AsMsgHandler(EstimateTokenCounter(4))
    options = {"threshold_tokens": threshold, "reserve_tokens": reserve, "force": force}

    def same_decisions() -> None:
        check = kept.context_check(context, **options)
        fresh = AsMsgHandler(EstimateTokenCounter(4)).context_check(context, **options)
        _assert_partition(context, check)
        assert check.plan == fresh.plan
        for ours, theirs in ((check.to_keep, fresh.to_keep), (check.to_compact, fresh.to_compact)):
            assert _shape(context, ours) == _shape(context, theirs)

    same_decisions()
    for edit, k in edits:
        msg = context[k % len(context)]
        blocks = msg.content if isinstance(msg.content, list) else []
        if edit == "shrink" and len(context) > 1:
            del context[max(1, k % len(context)) :]
        elif edit == "block" and blocks and isinstance(blocks[k % len(blocks)], TextBlock):
            blocks[k % len(blocks)] = TextBlock(text="e" * (k % 3000))
        elif edit == "same_id" and msg.role == "assistant":
            twin = AssistantMsg("assistant", [TextBlock(text="t" * (k % 3000))])
            twin.id = msg.id
            context[k % len(context)] = twin
        elif edit == "pin":
            pin_message(msg)
        elif edit == "str" and msg.role == "assistant":
            msg.content = "s" * (k % 3000)  # type: ignore[assignment]
        elif edit == "grow" and isinstance(context[-1].content, list):
            context[-1].content.append(TextBlock(text="g" * (k % 3000)))
        same_decisions()
