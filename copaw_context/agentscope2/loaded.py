"""Messages read from a file (``/load_history``) as 2.x ``Msg`` objects, checked whole.

A message must validate as a 2.x ``Msg`` and serialise the way the archive writes it
(``model_dump(mode="json")``, one JSON line): one that does not would make every later
compaction and ``/clear`` fail. A message in AgentScope 1.x's shape (a text ``content``,
``tool_use`` or ``source`` blocks, a ``timestamp``) is named as such. Messages count from 1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentscope.message import Msg
from pydantic import ValidationError

from copaw_context.core.archive.lines import dump_line

__all__ = ["validated_messages"]

_AS1_KINDS = ("tool_use", "image", "audio", "video")


def _as1_sign(data: Mapping[str, Any]) -> str | None:
    """What marks ``data`` as an AgentScope 1.x message, if anything does."""
    content = data.get("content")
    if isinstance(content, str):
        return "its content is a text, not a list of blocks"
    for number, block in enumerate(content if isinstance(content, list) else [], 1):
        if isinstance(block, Mapping) and block.get("type") in _AS1_KINDS:
            return f"block {number} has the 1.x type {block.get('type')!r}"
    if "timestamp" in data and "created_at" not in data:
        return "it has the 1.x field 'timestamp'"
    return None


def _one(data: Mapping[str, Any], number: int) -> Msg:
    try:
        msg = Msg.model_validate(data)
    except ValidationError as exc:
        sign = _as1_sign(data)
        if sign is not None:
            raise ValueError(
                f"message {number} is an AgentScope 1.x message ({sign}) and this agent runs "
                "AgentScope 2.x; a dump loads back into an agent of the same major (dump the "
                "history again from a 2.x agent)"
            ) from None
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "(top level)"
        raise ValueError(
            f"message {number} is not an AgentScope 2.x message: {where}: {first['msg']}"
        ) from None
    try:
        dump_line({"message": msg.model_dump(mode="json")})
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValueError(
            f"message {number} cannot be written to the archive ({type(exc).__name__}: "
            f"{str(exc)[:200]}); make its content and metadata plain JSON"
        ) from None
    return msg


def validated_messages(messages: Sequence[Mapping[str, Any]]) -> list[Msg]:
    """``messages`` as ``Msg`` objects; ``ValueError`` naming the first that is not valid."""
    return [_one(data, number) for number, data in enumerate(messages, 1)]
