"""OpenAI chat-completions rules for tool calls, checked on a formatted message list."""

from __future__ import annotations

from typing import Any

__all__ = ["openai_pairing_problems"]


def openai_pairing_problems(
    formatted: list[dict[str, Any]], *, pending_ok: bool = True
) -> list[str]:
    """Check tool-call pairing in an OpenAI chat-completions message list.

    OpenAI requires each `tool` message to sit in the contiguous run of tool
    messages right after the assistant message whose `tool_calls` holds its
    id, and every tool call to be answered there. With `pending_ok`, calls of
    the last assistant message may still be unanswered. Returns readable
    problems; an empty list means the sequence is valid.
    """
    last_assistant = max(
        (i for i, msg in enumerate(formatted) if msg.get("role") == "assistant"), default=-1
    )
    check = _RunCheck(last_assistant if pending_ok else None)
    for index, msg in enumerate(formatted):
        if msg.get("role") == "tool":
            check.tool_message(index, msg)
            continue
        check.close_run()
        if msg.get("role") == "assistant" and msg.get("tool_calls"):
            check.assistant_calls(index, msg["tool_calls"])
    check.close_run()
    return check.problems


class _RunCheck:
    """The walk over the list: open calls, the current run of tool messages, problems."""

    def __init__(self, may_stay_pending: int | None) -> None:
        self.may_stay_pending = may_stay_pending
        self.problems: list[str] = []
        self.call_origin: dict[str, int] = {}
        self.call_names: dict[str, str] = {}
        self.answered: set[str] = set()
        self.run_owner = -1
        self.run_pending: list[str] = []

    def close_run(self) -> None:
        """The run of tool messages ended: every call of its assistant message is answered."""
        owner, pending = self.run_owner, self.run_pending
        self.run_owner, self.run_pending = -1, []
        if owner < 0 or owner == self.may_stay_pending:
            return
        for call_id in pending:
            self.problems.append(
                f"message {owner}: tool call {call_id!r} ({self.call_names[call_id]}) has no "
                "tool message in the run directly after it"
            )

    def tool_message(self, index: int, msg: dict[str, Any]) -> None:
        call_id = msg.get("tool_call_id")
        if not call_id:
            self.problems.append(f"message {index}: tool message without a tool_call_id")
        elif call_id in self.answered:
            self.problems.append(f"message {index}: second tool message for call {call_id!r}")
        elif call_id in self.run_pending:
            self.run_pending.remove(call_id)
            self.answered.add(call_id)
        elif call_id in self.call_origin:
            self.answered.add(call_id)
            self.problems.append(
                f"message {index}: tool message for call {call_id!r} is not in the run of "
                f"tool messages directly after its assistant message {self.call_origin[call_id]}"
            )
        else:
            self.problems.append(
                f"message {index}: tool message for unknown call {call_id!r} "
                "(no earlier assistant message has a tool_call with this id)"
            )
        name = msg.get("name")
        if call_id in self.call_names and name and name != self.call_names[call_id]:
            self.problems.append(
                f"message {index}: tool message named {name!r} answers call {call_id!r} "
                f"of {self.call_names[call_id]!r}"
            )

    def assistant_calls(self, index: int, tool_calls: list[dict[str, Any]]) -> None:
        self.run_owner = index
        for tool_call in tool_calls:
            call_id = tool_call.get("id")
            if not call_id:
                self.problems.append(f"message {index}: tool call without an id")
                continue
            if call_id in self.run_pending or (
                call_id in self.call_origin and call_id not in self.answered
            ):
                self.problems.append(
                    f"message {index}: duplicate tool call id {call_id!r} "
                    f"(still unanswered from message {self.call_origin[call_id]})"
                )
                continue
            # Reusing an id after its call was answered is valid (some servers do it).
            self.answered.discard(call_id)
            self.call_origin[call_id] = index
            self.call_names[call_id] = str(tool_call.get("function", {}).get("name", "?"))
            self.run_pending.append(call_id)
