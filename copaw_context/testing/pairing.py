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
    problems: list[str] = []
    call_origin: dict[str, int] = {}
    call_names: dict[str, str] = {}
    answered: set[str] = set()
    last_assistant = max(
        (i for i, msg in enumerate(formatted) if msg.get("role") == "assistant"), default=-1
    )
    run_owner = -1
    run_pending: list[str] = []

    def close_run() -> None:
        if run_owner < 0 or (pending_ok and run_owner == last_assistant):
            return
        for call_id in run_pending:
            problems.append(
                f"message {run_owner}: tool call {call_id!r} ({call_names[call_id]}) has no "
                "tool message in the run directly after it"
            )

    for index, msg in enumerate(formatted):
        role = msg.get("role")
        if role == "tool":
            call_id = msg.get("tool_call_id")
            if not call_id:
                problems.append(f"message {index}: tool message without a tool_call_id")
            elif call_id in answered:
                problems.append(f"message {index}: second tool message for call {call_id!r}")
            elif call_id in run_pending:
                run_pending.remove(call_id)
                answered.add(call_id)
            elif call_id in call_origin:
                answered.add(call_id)
                problems.append(
                    f"message {index}: tool message for call {call_id!r} is not in the run of "
                    f"tool messages directly after its assistant message {call_origin[call_id]}"
                )
            else:
                problems.append(
                    f"message {index}: tool message for unknown call {call_id!r} "
                    "(no earlier assistant message has a tool_call with this id)"
                )
            name = msg.get("name")
            if call_id in call_names and name and name != call_names[call_id]:
                problems.append(
                    f"message {index}: tool message named {name!r} answers call {call_id!r} "
                    f"of {call_names[call_id]!r}"
                )
            continue
        close_run()
        run_owner, run_pending = -1, []
        if role == "assistant" and msg.get("tool_calls"):
            run_owner = index
            for tool_call in msg["tool_calls"]:
                call_id = tool_call.get("id")
                if not call_id:
                    problems.append(f"message {index}: tool call without an id")
                    continue
                if call_id in run_pending or (call_id in call_origin and call_id not in answered):
                    problems.append(
                        f"message {index}: duplicate tool call id {call_id!r} "
                        f"(still unanswered from message {call_origin[call_id]})"
                    )
                    continue
                # Reusing an id after its call was answered is valid (some servers do it).
                answered.discard(call_id)
                call_origin[call_id] = index
                call_names[call_id] = str(tool_call.get("function", {}).get("name", "?"))
                run_pending.append(call_id)
    close_run()
    return problems
