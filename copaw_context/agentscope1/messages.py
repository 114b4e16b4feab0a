"""AgentScope 1.x messages <-> the engine's neutral views.

A 1.x ``Msg`` holds a string or a list of TypedDict blocks without ids; tool calls
(``tool_use``) sit in the assistant message and each result (``tool_result``) in a ``system``
message of its own. Everything read or written inside one (views, part keys, our entry in
``msg.metadata["copaw_context"]``: ``pinned``, ``results``, ``origin``) is the dict-block
form of :mod:`copaw_context.core.host.dict_blocks`; this module builds the ``Msg``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from agentscope.message import Msg

from copaw_context.core.host.dict_blocks import is_pinned, kept_blocks, part_keys, pin_message
from copaw_context.core.host.views import METADATA_KEY

__all__ = [
    "ARCHIVE_FORM",
    "METADATA_KEY",
    "ThinkingPolicy",
    "is_pinned",
    "part_keys",
    "pin_message",
    "with_blocks",
]

ARCHIVE_FORM = "agentscope1.Msg"
"""How an archived message is serialised: ``Msg.to_dict()`` (loads with ``Msg.from_dict``)."""

ThinkingPolicy = bool
"""Whether the model's formatter sends thinking blocks back (1.x blocks carry no provider
fields, so one answer holds for all)."""


def with_blocks(msg: Msg, indices: Sequence[int]) -> Msg:
    """A copy of ``msg`` holding only the blocks at ``indices`` (same id and timestamp)."""
    kept, metadata = kept_blocks(msg, indices)
    part = Msg(msg.name, cast(Any, kept), msg.role, metadata, msg.timestamp, msg.invocation_id)
    part.id = msg.id
    return part
