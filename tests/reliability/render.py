"""The fake host's neutral messages as OpenAI, Anthropic and DashScope request messages.

The same layout AgentScope's formatters give (no AgentScope needed, so the engine tests are
host-neutral): an assistant message's text and tool calls form one assistant turn, its tool
results follow as tool messages (Anthropic: one user turn of ``tool_result`` blocks), text
after the results starts a new assistant turn; thinking is not sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from copaw_context.core.host.protocol import PartView

__all__ = ["render_input"]


class NeutralMessage(Protocol):
    role: str
    parts: list[PartView]


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _result_text(part: PartView) -> str:
    return "\n".join(p for p in part.output if isinstance(p, str))


def _openai(system: str, summary: str, messages: Sequence[NeutralMessage]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": [_text(system)]}]
    if summary:
        out.append({"role": "user", "content": [_text(summary)]})
    for message in messages:
        if message.role == "user":
            out.append({"role": "user", "content": [_text(p.text) for p in message.parts]})
            continue
        turn: dict[str, Any] = {"role": "assistant", "content": []}
        for part in message.parts:
            if part.kind == "tool_result":
                if turn["content"] or turn.get("tool_calls"):
                    out.append(turn)
                turn = {"role": "assistant", "content": []}
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": part.call_id,
                        "content": _result_text(part),
                        "name": part.tool_name,
                    }
                )
            elif part.kind == "tool_call":
                function = {"name": part.tool_name, "arguments": part.tool_input}
                call = {"id": part.call_id, "type": "function", "function": function}
                turn.setdefault("tool_calls", []).append(call)
            elif part.kind == "text":
                turn["content"].append(_text(part.text))
        if turn["content"] or turn.get("tool_calls"):
            out.append(turn)
    return out


def _anthropic(
    system: str, summary: str, messages: Sequence[NeutralMessage]
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": [_text(system)]}]
    if summary:
        out.append({"role": "user", "content": [_text(summary)]})
    for message in messages:
        if message.role == "user":
            out.append({"role": "user", "content": [_text(p.text) for p in message.parts]})
            continue
        role, blocks = "assistant", []
        for part in message.parts:
            results = part.kind == "tool_result"
            if part.kind not in ("text", "tool_call", "tool_result"):
                continue
            wanted = "user" if results else "assistant"
            if wanted != role:
                if blocks:
                    out.append({"role": role, "content": blocks})
                role, blocks = wanted, []
            if results:
                content = [_text(_result_text(part) or "(empty)")]
                block = {"type": "tool_result", "tool_use_id": part.call_id, "content": content}
                blocks.append(block)
            elif part.kind == "tool_call":
                blocks.append({"type": "tool_use", "id": part.call_id, "name": part.tool_name})
            else:
                blocks.append(_text(part.text))
        if blocks:
            out.append({"role": role, "content": blocks})
    return out


def render_input(
    system: str, summary: str, messages: Sequence[NeutralMessage]
) -> dict[str, list[dict[str, Any]]]:
    """One model input per provider: ``{"openai": ..., "anthropic": ..., "dashscope": ...}``."""
    openai = _openai(system, summary, messages)
    return {
        "openai": openai,
        "anthropic": _anthropic(system, summary, messages),
        "dashscope": openai,
    }
