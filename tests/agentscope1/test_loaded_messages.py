"""A 1.x message read from a file is checked as the formatters and the archive need it."""

from __future__ import annotations

from typing import Any

import pytest

from copaw_context.agentscope1.session import message_from_dict


def _nest(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def _user(*blocks: dict[str, Any], **fields: Any) -> dict[str, Any]:
    base = {"id": "u1", "name": "user", "role": "user", "content": list(blocks)}
    return {**base, "metadata": {}, "timestamp": "2026-12-03 05:58:43.000", **fields}


HI = {"type": "text", "text": "hi"}


def test_a_message_the_agent_cannot_copy_is_refused_by_the_host_itself() -> None:
    """Without the engine's nesting bound, the host's own check still refuses it."""
    with pytest.raises(ValueError, match="message 3 cannot be written to the archive"):
        message_from_dict(_user(HI, metadata={"x": _nest(900)}), 3)


@pytest.mark.parametrize(
    ("block", "wanted"),
    [
        ({"type": "image"}, 'block 2 (image): it needs a "source"'),
        ({"type": "audio", "source": {"type": "url", "url": 5}}, "(it is an int)"),
        ({"type": "video", "source": {"type": "base64", "data": "AA=="}}, '"media_type"'),
        ({"type": "text", "text": ["a"]}, 'its "text" must be text (it is a list)'),
        ({"type": "thinking"}, 'its "thinking" must be text (it is missing)'),
        ({"type": "tool_use", "name": "f", "input": {}}, 'non-empty "id"'),
        ({"type": "tool_use", "id": "c", "name": "f", "input": "{}"}, '"input" must be an'),
        ({"type": "tool_result", "id": "c", "name": "f", "output": 3}, '"output" must be'),
        ({"type": "tool_result", "id": "c", "name": "f", "output": [{"type": "x"}]}, "output"),
        ({"type": "sound"}, "not one AgentScope 1.x knows"),
        ({"type": "hint", "hint": "x"}, "is an AgentScope 2.x message"),
        ({"type": "text", "text": "x", "created_at": "t"}, "2.x field 'created_at'"),
    ],
)
def test_blocks_the_formatters_cannot_take_are_named(block: dict[str, Any], wanted: str) -> None:
    with pytest.raises(ValueError, match="^message 2") as raised:
        message_from_dict(_user(HI, block), 2)
    assert wanted in str(raised.value), raised.value


def test_a_dumped_message_still_loads() -> None:
    call = {"type": "tool_use", "id": "c1", "name": "read", "input": {"p": "a"}, "raw_input": ""}
    result = {"type": "tool_result", "id": "c1", "name": "read", "output": [HI]}
    image = {"type": "image", "source": {"type": "url", "url": "https://x.test/a.png"}}
    msg = message_from_dict(_user(HI, call, result, image, {"type": "thinking", "thinking": ""}))
    assert len(msg.content) == 5
