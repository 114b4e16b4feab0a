"""Messages read from a file (``/load_history``) as 2.x ``Msg`` objects, checked whole.

A message must validate as a 2.x ``Msg`` and serialise the way the archive writes it
(``model_dump(mode="json")``, one JSON line): one that does not would make every later
compaction and ``/clear`` fail. A message in AgentScope 1.x's shape (a text ``content``,
``tool_use`` or ``source`` blocks, a ``timestamp``) is named as such. Messages count from 1.
The rules are ``core.host.loaded``'s; this builds the ``Msg``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentscope.message import Msg
from pydantic import ValidationError

from copaw_context.core.host.loaded import as1_sign, check_archivable, other_major

__all__ = ["validated_messages"]


def _one(data: Mapping[str, Any], number: int) -> Msg:
    try:
        msg = Msg.model_validate(data)
    except ValidationError as exc:
        sign = as1_sign(data)
        if sign is not None:
            raise other_major(number, sign, found="1.x", runs="2.x") from None
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "(top level)"
        raise ValueError(
            f"message {number} is not an AgentScope 2.x message: {where}: {first['msg']}"
        ) from None
    check_archivable(number, lambda: msg.model_dump(mode="json"))
    return msg


def validated_messages(messages: Sequence[Mapping[str, Any]]) -> list[Msg]:
    """``messages`` as ``Msg`` objects; ``ValueError`` naming the first that is not valid."""
    return [_one(data, number) for number, data in enumerate(messages, 1)]
