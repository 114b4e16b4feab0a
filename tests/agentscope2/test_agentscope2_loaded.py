"""A 2.x message read from a file must serialise as the archive writes it (issue 17)."""

from __future__ import annotations

from typing import Any

import pytest

from copaw_context.agentscope2.loaded import validated_messages


def _nest(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def _user(**fields: Any) -> dict[str, Any]:
    return {"name": "user", "role": "user", "content": [{"type": "text", "text": "hi"}], **fields}


def test_a_message_the_archive_cannot_write_is_refused_by_the_host_itself() -> None:
    """Without the engine's nesting bound, the host's own check still refuses it."""
    with pytest.raises(ValueError, match="message 2 cannot be written to the archive"):
        validated_messages([_user(), _user(metadata={"x": _nest(300)})])


def test_a_1x_message_is_named_as_such() -> None:
    as1 = {"name": "u", "role": "user", "content": "hi", "timestamp": "2026-12-03 05:58:43"}
    with pytest.raises(ValueError, match="message 1 is an AgentScope 1.x message"):
        validated_messages([as1])
    call = {"type": "tool_use", "id": "c", "name": "f", "input": {}}
    with pytest.raises(ValueError, match="block 1 has the 1.x type 'tool_use'"):
        validated_messages([_user(content=[call])])
