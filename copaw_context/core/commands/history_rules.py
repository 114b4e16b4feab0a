"""What a loaded history must satisfy beyond its form, and the bound on its summary.

Providers reject a conversation that opens with the assistant, holds an empty message or a
system message after the conversation began; :func:`check_conversation` refuses such a file
naming the message (numbered from 1, as a user counts them). :func:`check_nesting` refuses
data nested deeper than the archive and the formatters handle. A loaded summary is bounded
like a compactor's (``core.steps.summary_room``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from copaw_context.core.host.protocol import MessageView

__all__ = [
    "MAX_NESTING",
    "HistoryRuleError",
    "check_conversation",
    "check_nesting",
    "nesting_depth",
]

MAX_NESTING = 100
"""Deepest nesting of objects and lists a loaded message may hold (the message itself is
level 1): pydantic's serialiser and ``copy.deepcopy`` fail a few hundred levels down."""

_CONTENT_KINDS = ("tool_call", "tool_result", "data")


class HistoryRuleError(ValueError):
    """A conversation a provider would reject; the message names the message and the fix."""


def _has_content(view: MessageView) -> bool:
    return any(
        p.kind in _CONTENT_KINDS or (p.kind in ("text", "hint") and p.text.strip())
        for p in view.parts
        if p.sent or p.kind != "thinking"
    )


def _is_results_only(view: MessageView) -> bool:
    """A message carrying tool results (AgentScope 1.x puts them in system/user messages)."""
    return any(p.kind == "tool_result" for p in view.parts)


def nesting_depth(value: Any) -> int:
    """Levels of objects and lists in ``value`` (``0`` for a scalar); no recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children)
    return deepest


def check_nesting(messages: Sequence[Mapping[str, Any]]) -> None:
    """Refuse a message nested deeper than :data:`MAX_NESTING` levels (numbered from 1)."""
    for number, message in enumerate(messages, 1):
        depth = nesting_depth(message)
        if depth > MAX_NESTING:
            ident = message.get("id")
            named = f" (id {ident!r})" if isinstance(ident, str) else ""
            raise HistoryRuleError(
                f"message {number}{named} is nested {depth} levels deep and at most "
                f"{MAX_NESTING} are allowed (the archive and the model's formatter cannot "
                "handle deeper data); flatten its content or metadata"
            )


def check_conversation(views: Sequence[MessageView], *, has_summary: bool) -> None:
    """Refuse what providers reject: an empty message, a system message after the
    conversation began, an unknown role, and (with no summary message in front) a
    conversation that does not open with a user message. Messages are numbered from 1."""
    started = False
    for index, view in enumerate(views):
        where = f"message {index + 1} ({view.role}, id {view.msg_id!r})"
        if view.role not in ("user", "assistant", "system"):
            raise HistoryRuleError(
                f"{where} has the role {view.role!r}; use user, assistant or system"
            )
        if not _has_content(view):
            raise HistoryRuleError(
                f"{where} is empty (no text, no tool call or result): providers reject an "
                "empty message; remove it or give it text"
            )
        if view.role == "system" and not _is_results_only(view):
            if started:
                raise HistoryRuleError(
                    f"{where} is a system message in the middle of the conversation: providers "
                    "accept system text only at the start; move it to the top or make it a "
                    "user message"
                )
            continue
        if not started and not has_summary and view.role != "user":
            raise HistoryRuleError(
                f"{where} opens the conversation, which providers require to open with a "
                "user message; add the user's request before it or remove it"
            )
        started = True
