"""Is a model input valid for OpenAI, Anthropic and DashScope? The rules their APIs enforce.

The input, formatted for each provider (by the host framework's own formatters, see
``drivers.py``, or from the fake host's neutral messages, see ``render.py``), is checked
against the rules those APIs reject requests for:

- every provider: one system message, first; a tool call answered in the run of tool
  messages (Anthropic: the user message) right after it, every answer to a call just made,
  no message without content;
- OpenAI and DashScope: ``openai_pairing_problems`` (no pending calls at a model call);
  DashScope: the last message is the user's or a tool's;
- Anthropic: tool results first in their user message, tool_use ids unique in the request
  (when the host never reuses ids), non-empty text blocks, the first turn the user's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from copaw_context.testing import openai_pairing_problems

__all__ = ["PROVIDERS", "anthropic_problems", "dashscope_problems", "provider_problems"]

PROVIDERS = ("openai", "anthropic", "dashscope")


def provider_problems(
    formatted: Mapping[str, list[dict[str, Any]]], *, unique_ids: bool = True
) -> dict[str, list[str]]:
    """The problems of one input formatted per provider (all empty: valid everywhere)."""
    return {
        "openai": openai_chat_problems(formatted["openai"]),
        "anthropic": anthropic_problems(formatted["anthropic"], unique_ids=unique_ids),
        "dashscope": dashscope_problems(formatted["dashscope"]),
    }


def _has_content(msg: dict[str, Any]) -> bool:
    content = msg.get("content")
    if isinstance(content, str):
        return bool(content.strip())
    if not isinstance(content, list):
        return False
    for part in content:
        if not isinstance(part, dict):
            continue
        if part.get("type") != "text" or str(part.get("text", "")).strip():
            return True
    return False


def _system_first(formatted: list[dict[str, Any]]) -> list[str]:
    problems = [
        f"message {i}: a system message after the first message"
        for i, msg in enumerate(formatted)
        if msg.get("role") == "system" and i > 0
    ]
    if not formatted:
        problems.append("no messages at all")
    return problems


def openai_chat_problems(formatted: list[dict[str, Any]]) -> list[str]:
    """OpenAI chat completions: pairing (no pending calls), system first, no empty turn."""
    problems = _system_first(formatted)
    problems += openai_pairing_problems(formatted, pending_ok=False)
    for index, msg in enumerate(formatted):
        role = msg.get("role")
        if role == "assistant" and not (_has_content(msg) or msg.get("tool_calls")):
            problems.append(f"message {index}: an assistant message with no content and no call")
        if role in ("user", "system") and not _has_content(msg):
            problems.append(f"message {index}: an empty {role} message")
    return problems


def dashscope_problems(formatted: list[dict[str, Any]]) -> list[str]:
    """DashScope (Qwen): the OpenAI rules, and the last message is a user's or a tool's."""
    problems = openai_chat_problems(formatted)
    if formatted and formatted[-1].get("role") not in ("user", "tool"):
        problems.append(f"the last message is a {formatted[-1].get('role')} message")
    return problems


def anthropic_problems(formatted: list[dict[str, Any]], *, unique_ids: bool = True) -> list[str]:
    """Anthropic messages API: tool_use answered by the next user message, results first."""
    problems = _system_first(formatted)
    turns = [m for m in formatted if m.get("role") != "system"]
    if turns and turns[0].get("role") != "user":
        problems.append("the first turn is not the user's")
    seen: set[str] = set()
    for index, msg in enumerate(turns):
        role, blocks = msg.get("role"), msg.get("content")
        if role not in ("user", "assistant") or not isinstance(blocks, list) or not blocks:
            problems.append(f"turn {index}: role {role!r} with content {blocks!r:.80}")
            continue
        problems += _empty_texts(index, blocks)
        uses = [b["id"] for b in blocks if b.get("type") == "tool_use"]
        for use in uses:
            if unique_ids and use in seen:
                problems.append(f"turn {index}: tool_use id {use!r} is not unique")
            seen.add(use)
        answered = _results(turns[index + 1]) if index + 1 < len(turns) else []
        missing = [u for u in uses if u not in answered]
        if missing:
            problems.append(f"turn {index}: tool_use {missing} not answered by the next turn")
        problems += _result_problems(index, msg, turns[index - 1] if index else None)
    return problems


def _empty_texts(index: int, blocks: list[dict[str, Any]]) -> list[str]:
    return [
        f"turn {index}: an empty text block"
        for b in blocks
        if b.get("type") == "text" and not str(b.get("text", "")).strip()
    ]


def _results(msg: dict[str, Any]) -> list[str]:
    blocks = msg.get("content")
    if msg.get("role") != "user" or not isinstance(blocks, list):
        return []
    return [str(b.get("tool_use_id")) for b in blocks if b.get("type") == "tool_result"]


def _result_problems(index: int, msg: dict[str, Any], previous: dict[str, Any] | None) -> list[str]:
    blocks = msg.get("content")
    assert isinstance(blocks, list)
    kinds = [b.get("type") for b in blocks]
    if "tool_result" not in kinds:
        return []
    problems: list[str] = []
    if msg.get("role") != "user":
        problems.append(f"turn {index}: tool_result in a {msg.get('role')} turn")
    first_other = next((i for i, k in enumerate(kinds) if k != "tool_result"), len(kinds))
    if "tool_result" in kinds[first_other:]:
        problems.append(f"turn {index}: a tool_result after other content")
    uses: set[str] = set()
    if previous is not None and previous.get("role") == "assistant":
        uses = {str(b.get("id")) for b in previous["content"] if b.get("type") == "tool_use"}
    for block in blocks:
        if block.get("type") == "tool_result" and block.get("tool_use_id") not in uses:
            problems.append(
                f"turn {index}: tool_result {block.get('tool_use_id')!r} answers no tool_use "
                "of the turn before"
            )
    return problems


def input_tokens(formatted: list[dict[str, Any]], tool_schemas: str, counter: Any) -> int:
    """Tokens of an OpenAI-formatted input counted from scratch with ``counter``: every text
    the provider receives (contents, call names and arguments, tool answers) plus the usual
    per-message (4) and per-block (3) overheads, and the tool schemas' JSON."""
    total = counter.count(tool_schemas) if tool_schemas else 0
    for msg in formatted:
        texts: list[str] = []
        content = msg.get("content")
        if isinstance(content, str):
            texts.append(f"{msg.get('name', '')} {content}" if msg["role"] == "tool" else content)
        elif isinstance(content, list):
            texts += [str(p.get("text", "")) for p in content if isinstance(p, dict)]
        for call in msg.get("tool_calls") or []:
            function = call.get("function", {})
            texts.append(f"{function.get('name', '')} {function.get('arguments', '')}")
        total += 4 + sum(3 + counter.count(text) for text in texts)
    return total
