"""Chat commands typed by the user: ``/compact [note]``, ``/context``, ``/clear``, ``/new``,
and QwenPaw's ``/history``, ``/dump_history [path]``, ``/load_history path``.

The host decides what counts as a command (a lone user message) and hands its text to
:func:`parse_command`; the engine runs it and returns the reply text, which keeps the
reference's shapes (``**Compact Complete!**`` and its figures) so QwenPaw users see what
they know.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from copaw_context.core.archiving import shielded, write_records
from copaw_context.core.compaction import archive_records, compact, previous_summary
from copaw_context.core.compactor_input import transcript_of
from copaw_context.core.events import CompactionRecord
from copaw_context.core.history import dump_history, history_lines, load_history
from copaw_context.core.host import HostSession

if TYPE_CHECKING:
    from copaw_context.core.engine import ContextEngine

__all__ = ["COMMANDS", "ChatCommand", "format_compact_reply", "parse_command", "run_command"]

COMMANDS = ("compact", "context", "clear", "new", "history", "dump_history", "load_history")
_MAX_NOTE_CHARS = 2000


@dataclass(frozen=True)
class ChatCommand:
    """A recognised command and its argument text."""

    name: str
    argument: str = ""


def parse_command(text: str | None) -> ChatCommand | None:
    """The command in a user message's text, or None when it is ordinary input.

    Only a text that starts with ``/<known command>`` counts, so a path such as
    ``/etc/hosts`` typed by the user is never taken for a command.
    """
    text = (text or "").strip()
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


async def run_command(engine: ContextEngine, host: HostSession, name: str, argument: str) -> str:
    """Execute a chat command and return the reply text."""
    if name == "context":
        return (await engine.report(host)).describe()
    if name == "history":
        return await history_lines(engine, host)
    if name == "dump_history":
        return await dump_history(engine, host, argument)
    if name == "load_history":
        return await load_history(engine, host, argument)
    if name in ("clear", "new"):
        return await _clear(engine, host, new_session=name == "new")
    if name != "compact":
        raise ValueError(f"unknown command /{name}; the commands are {', '.join(COMMANDS)}")
    before = await engine.report(host)
    if not before.message_count:
        return "**No messages to compact.** The context is empty; the summary is unchanged."
    event = await compact(engine, host, trigger="command", note=argument)
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
        had_summary = bool(previous_summary(engine.state(host), host))
        kept = " The previous summary is kept." if had_summary else ""
        return f"**Nothing compacted.** The {event.message}.{kept}"
    return format_compact_reply(
        compacted=event.messages_compacted,
        tokens_before=before.total,
        tokens_after=event.tokens_after,
        window=before.window,
        summary=previous_summary(engine.state(host), host),
        fallback_reason=event.fallback_reason,
    )


async def _clear(engine: ContextEngine, host: HostSession, *, new_session: bool) -> str:
    if host.awaiting_confirmation():
        return (
            "**Not cleared.** A tool call is waiting for your confirmation (or an external "
            "result); answer or interrupt it first, then clear."
        )
    ledger, _ = await engine.sync(host)
    count = len(ledger.messages)
    groups = [(index, None) for index in range(count)]
    records = archive_records(host, groups)
    transcript = tuple(transcript_of(host.view(index)) for index in range(count))
    session = host.session_id
    state = engine.state(host)

    async def archive_then_clear() -> bool:
        written = await write_records(engine, host, records)
        await host.clear(new_session=new_session)
        ledger.reset()
        state.forget_conversation()
        return written is not None

    archived = await shielded(archive_then_clear())
    if transcript:
        await engine.notify(
            CompactionRecord(
                trigger="new" if new_session else "clear",
                session_id=session,
                agent_name=host.agent_name,
                messages=transcript,
                summary=None,
                archive_files=(),
            )
        )
    dialog = engine.config.light_context_config.dialog_path
    where = f" to {dialog}/" if count else ""
    if count and not archived:
        where = f" to the session state ({dialog}/ is not writable; they are written there later)"
    if new_session:
        return (
            f"**New session started.** {count} message(s) archived{where}; "
            "context and summary cleared."
        )
    return f"**Context cleared.** {count} message(s) archived{where}; summary cleared."
