"""The dict-block form (``core.host.dict_blocks``, ``dict_session``) over plain objects: what
an AgentScope 1.x adapter, and any other host of 1.x ``Msg`` objects, views and edits, with no
AgentScope installed (issue 18 item 2)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from copaw_context.core.host.dict_blocks import (
    archive_id,
    blocks_of,
    data_url,
    find_result,
    is_pinned,
    kept_blocks,
    message_view,
    part_keys,
    pin_message,
    result_meta,
    set_data_text,
    set_result,
    set_text,
)
from copaw_context.core.host.dict_session import DictBlockSession
from copaw_context.core.host.protocol import Window
from copaw_context.core.host.session_base import SessionSetup


class Message:
    """A message of the dict-block form (what 1.x's ``Msg`` holds)."""

    def __init__(self, msg_id: str, role: str, content: Any, metadata: Any = None) -> None:
        self.id = msg_id
        self.name = role
        self.role = role
        self.content = content
        self.metadata = metadata
        self.timestamp = "2026-01-01 00:00:00.000"


def _call_and_result() -> tuple[Message, Message]:
    call = Message(
        "a1",
        "assistant",
        [
            {"type": "thinking", "thinking": "hmm"},
            {"type": "tool_use", "id": "c1", "name": "grep", "input": {"q": "x"}},
        ],
    )
    result = Message(
        "s1",
        "system",
        [
            {
                "type": "tool_result",
                "id": "c1",
                "name": "grep",
                "output": [
                    {"type": "text", "text": "found"},
                    {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}},
                ],
            }
        ],
    )
    return call, result


def test_views_of_calls_results_thinking_and_data() -> None:
    call, result = _call_and_result()
    view = message_view(call, thinking=False)
    assert [p.kind for p in view.parts] == ["thinking", "tool_call"]
    assert view.parts[0].sent is False
    assert view.parts[1].text == 'grep {"q": "x"}' and view.parts[1].call_id == "c1"
    (part,) = message_view(result, thinking=True).parts
    assert part.kind == "tool_result" and part.text == "grep found" and part.data_blocks == 1
    assert part.output[0] == "found" and part.meta == {}
    odd = Message("u1", "tool", "plain text")
    assert message_view(odd, True).role == "assistant" and blocks_of(odd)[0]["text"] == "plain text"


def test_result_entries_part_keys_and_a_cut_in_two() -> None:
    call, result = _call_and_result()
    set_result(result, 0, ["cut"], {"pruned_to": 10})
    assert result.content[0]["output"] == [{"type": "text", "text": "cut"}]
    assert result_meta(result, "c1") == {"pruned_to": 10}
    assert find_result([call, result], "c1") == (result, 0, result.content[0])
    assert part_keys(call) == ["a1/thinking#0", "a1/tool_use:c1"]
    kept, metadata = kept_blocks(call, [1])
    assert kept == [call.content[1]] and kept[0] is not call.content[1]
    assert metadata["copaw_context"]["origin"] == [1]
    half = Message("a1", "assistant", kept, metadata)
    assert part_keys(half) == ["a1/tool_use:c1"]
    assert archive_id(half) != archive_id(call)


def test_pins_texts_and_data_parts() -> None:
    msg = Message("u1", "user", [{"type": "text", "text": "hi"}, {"type": "audio", "source": {}}])
    assert not is_pinned(msg)
    assert pin_message(msg) is msg and is_pinned(msg)
    set_text(msg, 0, "hello")
    assert msg.content[0]["text"] == "hello"
    with pytest.raises(TypeError, match="not a text"):
        set_text(msg, 1, "x")
    assert data_url(msg, 1) == "data:application/octet-stream;base64,"
    set_data_text(msg, 1, "[audio moved]")
    assert msg.content[1] == {"type": "text", "text": "[audio moved]"}
    text_only = Message("u2", "user", "one part")
    set_text(text_only, 0, "changed")
    assert text_only.content == "changed"
    with pytest.raises(IndexError):
        set_text(text_only, 1, "x")


class ListSession(DictBlockSession):
    """The dict-block session over a plain list (what an adapter adds: where messages are)."""

    FORM = "test.Message"

    def __init__(self, messages: list[Message]) -> None:
        setup = SessionSetup({}, True, Window(1000, "test"), None)
        super().__init__(object(), setup, {})
        self.messages = messages

    def message(self, index: int) -> Message:
        return self.messages[index]

    def with_blocks(self, msg: Message, parts: Sequence[int]) -> Message:
        kept, metadata = kept_blocks(msg, parts)
        return Message(msg.id, msg.role, kept, metadata)

    def to_dict(self, msg: Message) -> dict[str, Any]:
        return {"id": msg.id, "content": msg.content}

    def from_dict(self, data: Mapping[str, Any], number: int) -> Message:
        if "id" not in data:
            raise ValueError(f"message {number} has no id")
        return Message(data["id"], "user", data["content"])


def test_the_dict_block_session_views_edits_and_archives() -> None:
    call, result = _call_and_result()
    session = ListSession([call, result])
    assert session.message_form == "test.Message" and not session.awaiting_confirmation()
    assert session.view(0, 1).parts[0].kind == "tool_call"
    session.set_tool_result(1, 0, ["short"], {"unseen": True})
    assert session.view(1).parts[0].meta == {"unseen": True}
    record = session.archive_record(0, [1])
    assert record.form == "test.Message" and record.part_keys == ("a1/tool_use:c1",)
    assert record.message["content"] == [call.content[1]]
    (view,) = session.views_of([{"id": "u9", "content": "hello"}])
    assert view.msg_id == "u9" and view.parts[0].text == "hello"
    with pytest.raises(ValueError, match="message 2 has no id"):
        session.views_of([{"id": "u9", "content": ""}, {"content": ""}])
