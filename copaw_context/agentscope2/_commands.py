"""Chat commands typed by the user: ``/compact [note]``, ``/context``, ``/clear``, ``/new``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from uuid import uuid4

from agentscope.message import Msg

from copaw_context.agentscope2._agent_state import agent_entry
from copaw_context.agentscope2._context_ops import (
    TokenReport,
    archive_messages,
    compact,
    previous_summary,
    shielded,
    token_report,
)
from copaw_context.core.errors import ArchiveError

if TYPE_CHECKING:
    from copaw_context.agentscope2._hook import MemoryCompactionHook

__all__ = ["COMMANDS", "ChatCommand", "format_compact_reply", "parse_command", "run_command"]

COMMANDS = ("compact", "context", "clear", "new")
_MAX_NOTE_CHARS = 2000


@dataclass(frozen=True)
class ChatCommand:
    """A recognised command and its argument text."""

    name: str
    argument: str = ""


def parse_command(inputs: object) -> ChatCommand | None:
    """The command in a single user message, or None when it is ordinary input.

    Only a lone user message whose text starts with ``/<known command>`` counts, so
    a path such as ``/etc/hosts`` typed by the user is never taken for a command.
    """
    if isinstance(inputs, list):
        if len(inputs) != 1:
            return None
        inputs = inputs[0]
    if not isinstance(inputs, Msg) or inputs.role != "user":
        return None
    text = (inputs.get_text_content() or "").strip()
    if not text.startswith("/"):
        return None
    head, _, rest = text[1:].partition(" ")
    name = head.strip().lower()
    if name not in COMMANDS:
        return None
    return ChatCommand(name, rest.strip()[:_MAX_NOTE_CHARS])


def format_compact_reply(
    *,
    compacted: int,
    tokens_before: int,
    tokens_after: int,
    window: int,
    summary: str,
    fallback_reason: str | None,
) -> str:
    """The reply to a successful ``/compact``."""

    def pct(tokens: int) -> str:
        return f"{tokens}/{window} ({100 * tokens / max(1, window):.1f}%)"

    lines = [
        "**Compact Complete!**",
        "",
        f"- Messages compacted: {compacted}",
        f"- Tokens: {pct(tokens_before)} -> {pct(tokens_after)}",
    ]
    if fallback_reason:
        lines.append(
            f"- The model summary failed ({fallback_reason}); an extractive summary was used"
        )
    lines += ["", "**Compressed Summary:**", summary]
    return "\n".join(lines)


async def run_command(hook: MemoryCompactionHook, agent: Any, command: ChatCommand) -> str:
    """Execute a chat command and return the reply text."""
    if command.name == "context":
        return _format_context(await token_report(hook, agent), agent)
    if command.name in ("clear", "new"):
        return await _clear(hook, agent, new_session=command.name == "new")
    before = await token_report(hook, agent)
    if not agent.state.context:
        return "**No messages to compact.** The context is empty; the summary is unchanged."
    event = await compact(hook, agent, trigger="command", note=command.argument)
    if event is not None and event.kind == "truncation":
        return (
            "**Nothing safe to compact.** Everything left is the latest request, pinned or a "
            f"pending tool call, so it was cut instead: {event.message}; tokens "
            f"{event.tokens_before} -> {event.tokens_after}. The summary is unchanged."
        )
    if event is None:
        return (
            "**No messages to compact.** Everything in the context is the latest request, "
            "pinned or a pending tool call; the summary is unchanged."
        )
    if event.kind == "compaction_failed":
        return f"**Compact Failed!** {event.message}. The previous summary is kept."
    entry = await agent_entry(hook, agent)
    return format_compact_reply(
        compacted=event.messages_compacted,
        tokens_before=before.total,
        tokens_after=event.tokens_after,
        window=before.window,
        summary=previous_summary(entry, agent),
        fallback_reason=event.fallback_reason,
    )


def _format_context(report: TokenReport, agent: Any) -> str:
    return "\n".join(
        [
            "**Context usage**",
            "",
            f"- System prompt: {report.system} tokens",
            f"- Summary: {report.summary} tokens",
            f"- Messages ({len(agent.state.context)}): {report.messages} tokens",
            f"- Tool schemas: {report.tools} tokens",
            f"- Total: {report.total} tokens "
            f"(calibration x{report.calibration:.2f}, counter {report.counter})",
            f"- Compaction threshold: {report.threshold} tokens; "
            f"reserve for recent messages: {report.reserve}",
            f"- Window: {report.window} tokens (from {report.window_source})",
        ]
    )


async def _clear(hook: MemoryCompactionHook, agent: Any, *, new_session: bool) -> str:
    if agent.state.has_awaiting_tool_calls(agent.name):
        return (
            "**Not cleared.** A tool call is waiting for your confirmation (or an external "
            "result); answer or interrupt it first, then clear."
        )
    context = list(agent.state.context)
    entry = await agent_entry(hook, agent)

    async def archive_then_clear() -> None:
        if context:
            await archive_messages(hook, agent, context)
        agent.state.context = []
        agent.state.summary = ""
        for key in ("summary", "guard_total"):
            entry.data.pop(key, None)
        if new_session:
            agent.state.session_id = uuid4().hex

    try:
        await shielded(archive_then_clear())
    except ArchiveError as exc:
        return (
            f"**Clear Failed!** The dialog archive could not be written ({exc}); "
            "nothing was removed."
        )
    where = f" to {hook.config.light_context_config.dialog_path}/" if context else ""
    if new_session:
        return (
            f"**New session started.** {len(context)} message(s) archived{where}; "
            "context and summary cleared."
        )
    return f"**Context cleared.** {len(context)} message(s) archived{where}; summary cleared."
